#!/usr/bin/env bash
# Main job: set up, verify the kernels on whatever backend is present, then build the workbook
# (the six notebooks executed to HTML under build/workbook/).
# On a GPU (scripts/setup.sh keeps the machine's torch): every compiled kernel variant is built into the Triton cache
# first (`dsa-lab warmup`, with the variants verify uses), so no later call waits for a compiler; verify runs the
# matrix at GPU scale; the notebooks' live cells run on the GPU.  On a CPU: the interpreter at small sizes.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
if .venv/bin/python -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"; then
  .venv/bin/dsa-lab warmup --fused --verify
  .venv/bin/dsa-lab verify --scale gpu
else
  .venv/bin/dsa-lab verify
fi
.venv/bin/dsa-lab workbook
