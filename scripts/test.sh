#!/usr/bin/env bash
# Set up, then run the whole test suite: unit tests (CPU/interpreter lane; `gpu`-marked tests
# run only where CUDA is present) and the notebooks re-executed as regression tests by nbval.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec .venv/bin/python -m pytest -q tests notebooks \
  --nbval --nbval-current-env --nbval-sanitize-with notebooks/nbval_sanitize.cfg "$@"
