"""Test setup: the Triton interpreter on machines without a GPU, and the `gpu` marker.

TRITON_INTERPRET must be set before triton.jit decorates the kernels, i.e. before
dsa_lab is imported, so it is set here at collection start.
"""
import os

import pytest
import torch

HAS_CUDA = torch.cuda.is_available()
if not HAS_CUDA:
    os.environ.setdefault("TRITON_INTERPRET", "1")

DEVICE = "cuda" if HAS_CUDA else "cpu"


def pytest_collection_modifyitems(config, items):
    if HAS_CUDA:
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (GPU-sized shapes)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def device():
    return DEVICE


@pytest.fixture
def fresh_seed():
    """A new seed each run (recorded in the test output on failure) — inputs are fresh every run."""
    seed = int.from_bytes(os.urandom(4), "little")
    torch.manual_seed(seed)
    return seed
