"""Test setup: the Triton interpreter on machines without a GPU (:mod:`dsa_lab._env`, before any kernel module
is imported), and the `gpu` marker."""
import os

import pytest
import torch

from dsa_lab import _env

HAS_CUDA = torch.cuda.is_available()
_env.interpret_without_gpu()

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
