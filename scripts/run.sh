#!/usr/bin/env bash
# Main job: set up, verify the kernels on whatever backend is present, then build the workbook
# (the six notebooks executed to HTML under build/workbook/).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
.venv/bin/dsa-lab verify
.venv/bin/dsa-lab workbook
