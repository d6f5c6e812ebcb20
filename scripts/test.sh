#!/usr/bin/env bash
# Set up, lint (ruff), then run the whole test suite: unit tests (CPU/interpreter lane; `gpu`-marked tests
# run only where CUDA is present) and the notebooks re-executed as regression tests by nbval.
# Two pytest-xdist workers (DSA_LAB_TEST_WORKERS, 0 = one process); --dist loadscope keeps each test module and each
# notebook on one worker, so a notebook's cells run in order in one kernel.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
# the linter first (pyproject.toml's [tool.ruff]); an offline .venv without ruff says so and goes on
if [ -x .venv/bin/ruff ]; then
  .venv/bin/ruff check .
else
  echo "test.sh: ruff is not installed (an offline .venv without it): lint skipped" >&2
fi
exec .venv/bin/python -m pytest -q -n "${DSA_LAB_TEST_WORKERS:-2}" --dist loadscope tests notebooks \
  --nbval --nbval-current-env --nbval-sanitize-with notebooks/nbval_sanitize.cfg "$@"
