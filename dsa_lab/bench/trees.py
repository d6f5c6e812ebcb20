"""Other trees of the package in one process: ``dsa_lab_old`` (or ``dsa_lab_NAME``) under a folder, for an A/B or a
check against another commit (``git archive REV dsa_lab | tar -x -C DIR && mv DIR/dsa_lab DIR/dsa_lab_old``)."""
from __future__ import annotations

import importlib
import os
import sys

__all__ = ["package"]


def package(arm: str, folder: str | None):
    """The package an arm calls: this tree for ``new`` (and ``triton``, the sweep's name for it),
    ``folder/dsa_lab_old`` for ``old``, ``folder/dsa_lab_NAME`` for ``pkg_NAME``."""
    if arm in ("new", "triton"):
        return importlib.import_module("dsa_lab")
    if arm != "old" and not arm.startswith("pkg_"):
        raise ValueError(f"arm {arm!r} names no tree: new, triton, old or pkg_NAME")
    name = "old" if arm == "old" else arm[4:]
    if folder is None:
        raise ValueError(f"arm {arm!r} needs --old DIR (the folder holding dsa_lab_{name}/)")
    if os.path.abspath(folder) not in sys.path:
        sys.path.insert(0, os.path.abspath(folder))
    return importlib.import_module(f"dsa_lab_{name}")
