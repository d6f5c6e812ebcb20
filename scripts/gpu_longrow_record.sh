#!/usr/bin/env bash
# The long-row select on a GPU, in one call: the token grid, prefill and value laws against torch.topk (every point's
# ids checked against the exact reference first), the concurrency check on its paths, and a fuzz at widths > 32768.
# From the repo root on the GPU machine:  bash scripts/gpu_longrow_record.sh OUT   (OUT/longrow.tar.gz comes back)
set -uo pipefail
out=${1:?usage: gpu_longrow_record.sh OUT}
rec="$out/longrow"
mkdir -p "$rec"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
timeout "${TOKENS_SECONDS:-230}" python3 -m dsa_lab.bench.tokens "$rec/tokens.csv" --grid --prefill --laws --probe \
  --max-seconds "${TOKENS_BOX:-200}" 2>&1 | tee "$rec/tokens.log"
timeout 90 python3 -m dsa_lab.cli verify --no-matrix --streams --no-progress \
  --cases select_k2048_262144,select_k512_65536 --record "$rec" 2>&1 | tail -12 | tee "$rec/streams.log"
timeout "${FUZZ_SECONDS:-100}" python3 -m dsa_lab.cli verify --no-matrix --arms triton --fuzz 100000 \
  --fuzz-menu 11,12,13,14 --fuzz-max-width 262144 --fuzz-max-rows 16 --fuzz-max-seconds "${FUZZ_BOX:-70}" \
  --no-progress --record "$rec" --fuzz-name fuzz_longrow.json 2>&1 | tail -8 | tee "$rec/fuzz.log"
tar -czf "$out/longrow.tar.gz" -C "$out" longrow
