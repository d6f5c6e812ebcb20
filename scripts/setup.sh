#!/usr/bin/env bash
# Create .venv (once) and install dsa_lab with its extras from pyproject.toml (the one dependency list).
# The `cpu` extra pins the CPU build of torch (a looser pin with no torch present pulls a CUDA build).
# Set DSA_LAB_TORCH_EXTRA= (empty) to keep a torch you already have, e.g. a CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
extras="${DSA_LAB_TORCH_EXTRA-cpu},test,notebooks"
extras="${extras#,}"
stamp=".venv/.dsa_lab_installed"
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null
  .venv/bin/python -m pip install -q -e ".[${extras}]"
  touch "$stamp"
fi
# Static figures and the browser check need a Chromium on PATH (Debian's package works offline).
if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
    || echo "note: could not install chromium; static figure export and the browser check will be skipped" >&2
fi
