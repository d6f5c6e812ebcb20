#!/usr/bin/env bash
# The GPU lane: what the CPU suite cannot check, on a CUDA GPU, in parts that each fit a 10-minute command.
#   scripts/gpu_check.sh [PART] [OUTDIR]       PART: warmup | tests | verify | notebooks | widgets | all (default all);
#                                              OUTDIR (default build/gpu_check): one log and one result line a part
# Parts (each after scripts/setup.sh and `dsa-lab warmup --fused --verify`, quick once the Triton cache is warm):
#   tests      the `gpu`-marked tests (pytest -m gpu): full-size shapes, CUDA graphs, streams, the 2^32 key order
#   verify     dsa-lab verify --scale gpu --fuzz $FUZZ --streams: the named matrix, a random fuzz, the concurrency check
#   notebooks  the six notebooks under nbval, their live cells on the GPU; OUTDIR/workbook_live.json says per notebook
#              what ran (cells, wall time, failures, every kernel a cell waited to compile)
#   widgets    the notebooks' timing widgets' callbacks at every slider setting (OUTDIR/live_widgets.json)
# Each part is time-boxed (PART_S seconds, default 540); the summary lists every part with a result in OUTDIR, so
# parts run in separate commands add up to one summary.  Exit status 1 when a part failed (a skipped test is a
# failure here: the lane exists to run them).  Without a CUDA GPU it stops (scripts/test.sh is the CPU lane).
set -uo pipefail
cd "$(dirname "$0")/.."
part=${1:-all}
out=${2:-build/gpu_check}
PART_S=${PART_S:-540}
FUZZ=${FUZZ:-3000}
case "$part" in
  warmup|tests|verify|notebooks|widgets|all) ;;
  *) echo "usage: $0 [warmup|tests|verify|notebooks|widgets|all] [OUTDIR]" >&2; exit 2 ;;
esac
mkdir -p "$out"
out=$(cd "$out" && pwd)
export PYTHONUNBUFFERED=1

scripts/setup.sh || exit 1
PY=.venv/bin/python
has_gpu() { $PY -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)"; }
if ! has_gpu && [ "${GPU_CHECK_ON_CPU:-0}" != 1 ]; then  # GPU_CHECK_ON_CPU=1: try the script itself on a CPU
  echo "gpu_check.sh: no CUDA GPU visible to .venv's torch; the CPU lane is scripts/test.sh" >&2
  exit 2
fi
$PY -c "import torch; print(torch.cuda.get_device_name() if torch.cuda.is_available() else 'no GPU', 'torch',
  torch.__version__)" > "$out/device.txt"

# run NAME CMD...: time-box one part, keep its log, write its result line "NAME|status|counts|minutes".
run() {
  local name=$1; shift
  local t0 rc log="$out/$name.log"
  t0=$(date +%s)
  echo "=== $name: $* (time box ${PART_S} s)" >&2
  timeout --kill-after=20 "$PART_S" "$@" > "$log" 2>&1
  rc=$?
  local secs=$(( $(date +%s) - t0 ))
  local counts status
  counts=$(summarize "$name" "$log")
  status=$([ "$rc" = 0 ] && echo pass || echo FAIL)
  [ "$rc" = 124 ] || [ "$rc" = 137 ] && counts="timed out after ${PART_S} s; $counts"
  if [ "$name" = tests ] && [[ "$counts" =~ [1-9][0-9]*\ skipped ]]; then status=FAIL; fi
  printf '%s|%s|%s|%s\n' "$name" "$status" "$counts" "$(awk "BEGIN{printf \"%.1f\", $secs/60}")" > "$out/$name.result"
  tail -n 3 "$log" >&2
  [ "$status" = pass ]
}

# The counts line of a part's log.
summarize() {
  case "$1" in
    warmup) grep -Eo '^[0-9]+ variants in [0-9.]+ s' "$2" | tail -n 1 ;;
    widgets) grep -E '^[a-z_]+_points: ' "$2" | paste -sd ';' - ;;
    verify) grep -E 'matrix cases x' "$2" | tail -n 1
            grep -E '^fuzz [a-z_]+:' "$2" | sed 's/ ([0-9.]* s)//'
            awk -F'|' '$2 ~ /^ [a-z]/ && $2 !~ /^ case / {n++; if ($6 + 0) bad++}
                       END {if (n) printf "streams: %d of %d checks differ\n", bad, n}' "$2" ;;
    *) grep -E '([0-9]+ (passed|failed|skipped|error|errors|deselected|xfailed)(, )?)+ in ' "$2" | tail -n 1 \
         | sed -E 's/ in [0-9.]+s.*//; s/=+//g; s/^ +//' ;;
  esac | paste -sd ';' - | sed 's/;/; /g'
}

fail=0
if has_gpu; then  # compile every variant first (16 threads), so no part waits for a compiler
  case "$part" in warmup|all) run warmup .venv/bin/dsa-lab warmup --fused --verify || fail=1 ;;
    *) run prewarm .venv/bin/dsa-lab warmup --fused --verify 2>/dev/null || fail=1 ;; esac  # kept off the summary
fi
if [ "$part" = tests ] || [ "$part" = all ]; then
  run tests $PY -m pytest -q -rs -p no:cacheprovider -m gpu tests || fail=1
fi
if [ "$part" = verify ] || [ "$part" = all ]; then
  run verify .venv/bin/dsa-lab verify ${VERIFY_ARGS:---scale gpu --fuzz "$FUZZ" --streams} --no-progress \
    --record "$out/verify_records" || fail=1
fi
if [ "$part" = notebooks ] || [ "$part" = all ]; then
  export DSA_LAB_WORKBOOK_RECORD="$out/workbook_live.json"
  run notebooks $PY -m pytest -q -rs -p no:cacheprovider --nbval --nbval-current-env \
    --nbval-sanitize-with notebooks/nbval_sanitize.cfg notebooks/ || fail=1
  unset DSA_LAB_WORKBOOK_RECORD
fi
if [ "$part" = widgets ] || [ "$part" = all ]; then
  run widgets $PY -m dsa_lab.workbook.live "$out/live_widgets.json" || fail=1
fi

{
  commit=${DSA_LAB_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo "?")}
  echo "GPU lane on $(cat "$out/device.txt") ($(date -u +%F), commit $commit)"
  for n in warmup tests verify notebooks widgets; do
    [ -f "$out/$n.result" ] || continue
    IFS='|' read -r name status counts mins < "$out/$n.result"
    printf '  %-9s %-4s  %5s min  %s\n' "$name" "$status" "$mins" "$counts"
  done
  echo "logs: $out/"
} | tee "$out/summary.txt"
grep -q ' FAIL ' "$out/summary.txt" && fail=1
exit "$fail"
