#!/usr/bin/env bash
# Main job: set up, verify the kernels on whatever backend is present, then build the workbook
# (the six notebooks executed to HTML under build/workbook/).  On a GPU, every compiled kernel variant is built
# into the Triton cache first (`dsa-lab warmup`), so no call of the workbook waits for a compiler.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
if .venv/bin/python -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"; then
  .venv/bin/dsa-lab warmup
fi
.venv/bin/dsa-lab verify
.venv/bin/dsa-lab workbook
