#!/usr/bin/env bash
# The concurrency record on a GPU: the check on another tree (OLD, e.g. the commit before a fix) and on this one,
# then a same-process A/B of the paths that keep scratch between calls.  From the repo root on the GPU machine:
#
#   git archive REV dsa_lab | tar -x -C .ab/old && mv .ab/old/dsa_lab .ab/old/dsa_lab_old     # here, once
#   OLD=.ab/old bash scripts/gpu_streams_record.sh OUT       # there (carry .ab); OUT/streams.tar.gz comes back
set -uo pipefail
out=${1:?usage: gpu_streams_record.sh OUT}
old=${OLD:-.ab/old}
rec="$out/streams"
mkdir -p "$rec"
py() { timeout "${STEP_SECONDS:-280}" python3 -m dsa_lab.cli "$@"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
python3 -c "import dsa_lab._scratch as s; print('capture query:', s._capture_info())"
if [ -d "$old/dsa_lab_old" ] && [ -z "${SKIP_OLD_CHECK:-}" ]; then
  py verify --no-matrix --streams-old "$old" --record "$rec" 2>&1 | tee "$rec/streams_old.log"
fi
py verify --no-matrix --streams --record "$rec" 2>&1 | tee "$rec/streams.log"
if [ -d "$old/dsa_lab_old" ]; then
  py ab "$rec/ab_topk.csv" --old "$old" --stage topk --k 64,256 --rows 1,4,32 --widths 131072,262144 --reps 4 \
    2>&1 | tee "$rec/ab_topk.log"
  for stage in select full; do
    py ab "$rec/ab_$stage.csv" --old "$old" --stage $stage --k 64,256 --rows 1,4,32 --widths 262144 --reps 4 \
      2>&1 | tee "$rec/ab_$stage.log"
  done
fi
tar -czf "$out/streams.tar.gz" -C "$out" streams
