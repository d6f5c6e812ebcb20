#!/usr/bin/env bash
# The recording run on a lent GPU (the copied tree's .git need not match it, so the commit is passed in).
#   scripts/gpu_record.sh COMMIT PHASE [PHASE ...]
# Phases:
#   warmup    dsa-lab warmup --fused --verify from an empty Triton cache, timed (data/h200/warmup.csv)
#   coldstart dsa-lab coldstart --preload: fresh processes' first calls at shapes the warmup never used
#   correct   the named matrix (MATRIX_SHARDS processes) and the random fuzz (FUZZ_SHARDS processes, FUZZ cases in
#             all) side by side: correctness only, so sharing the GPU is fine; CORRECT_S bounds it
#   sweep     the decode sweep (SUITES, default select,full; ARMS, default the Triton arms; SWEEP_ARGS, more options such
#             as --k 64 --concurrency 1,2), resumable, into SWEEP_OUT
#   gputests  every gpu-marked test
# BUDGET_S (default 560) bounds the whole run: time-boxed phases take what is left, keeping RESERVE_S for the ones
# after them.  Records land in data/h200/ and are packed into $OUT/data_h200.tgz after each phase.
set -u
export DSA_LAB_COMMIT="$1"; shift
export DSA_LAB_DIRTY=0 PYTHONPATH="$PWD" PYTHONUNBUFFERED=1
export TRITON_CACHE_DIR=${TRITON_CACHE_DIR:-$PWD/build/triton_cache}  # kept between calls on a warm machine
OUT=${OUT:-build/gpu_out}
BUDGET_S=${BUDGET_S:-560}
T0=$(date +%s)
left() { echo $(( BUDGET_S - ($(date +%s) - T0) )); }
box() { local b=$(( $(left) - $1 )); [ "$b" -lt 20 ] && b=20; echo "$b"; }  # seconds for a phase, keeping $1 for later ones
LOGS=build/gpu_logs
mkdir -p "$OUT" data/h200 "$LOGS"
cli() { python3 -m dsa_lab.cli "$@"; }
for ph in "$@"; do
  echo "=== phase $ph ($(date -u +%T), $(left) s left)"
  case "$ph" in
    warmup)
      rm -rf "$TRITON_CACHE_DIR" data/h200/warmup.csv
      python3 -m dsa_lab.cli warmup --fused --verify --threads 16 --csv data/h200/warmup.csv ;;
    coldstart) cli coldstart data/h200/coldstart.csv --processes 4 --shapes 24 --preload ;;
    correct)
      box_s=$(box "${RESERVE_CORRECT_S:-200}"); n=${FUZZ_SHARDS:-8}; per=$(( ${FUZZ:-60000} / n )); pids=()
      seed=$(( RANDOM * 32768 + RANDOM ))
      for i in $(seq 0 $(( n - 1 ))); do
        # shard i draws from the fuzz menu's entries i, i + n, ... (10 entries: each drawn by one shard), so the
        # shards compile different kernels in parallel instead of every shard compiling all of them
        timeout "$(( box_s + 20 ))" python3 -m dsa_lab.cli verify --scale gpu --no-matrix --fuzz "$per" \
          --fuzz-menu "$(seq -s, "$(( i % 10 ))" "$n" 9)" \
          --fuzz-max-seconds "$(( box_s - 25 ))" --seed "$(( 2001 + i ))" --record data/h200 \
          --fuzz-name "fuzz_shard$i.json" --fuzz-dump data/h200/fuzz_failures --no-progress \
          > "$LOGS/fuzz_shard$i.log" 2>&1 & pids+=($!)
      done
      for i in $(seq 0 $(( ${MATRIX_SHARDS:-2} - 1 ))); do
        timeout "$(( box_s + 20 ))" python3 -m dsa_lab.cli verify --scale gpu --seed "$seed" \
          --matrix-shard "$i/${MATRIX_SHARDS:-2}" --matrix-name "verify_matrix_shard$i.csv" --record data/h200 \
          --no-progress > "$LOGS/matrix_shard$i.log" 2>&1 & pids+=($!)
      done
      wait "${pids[@]}"
      python3 -m dsa_lab.bench.verify merge data/h200/fuzz.json data/h200/fuzz_shard*.json \
        && rm -f data/h200/fuzz_shard*.json data/h200/fuzz_shard*.meta.json
      python3 -m dsa_lab.bench.verify merge-matrix data/h200/verify_matrix.csv data/h200/verify_matrix_shard*.csv \
        && rm -f data/h200/verify_matrix_shard*
      tail -n 3 "$LOGS"/fuzz_shard*.log; tail -n 4 "$LOGS"/matrix_shard*.log ;;
    sweep) cli sweep --suite "${SUITES:-select,full}" --arms "${ARMS:-triton,triton_fused}" --out "${SWEEP_OUT:-data/h200/rerecord}" \
             --max-seconds "$(box "${RESERVE_SWEEP_S:-30}")" --no-progress ${SWEEP_ARGS:-} ;;
    gputests) timeout "$(box 0)" python3 -m pytest -q -m gpu -p no:cacheprovider tests ;;
    *) echo "unknown phase $ph" ;;
  esac 2>&1 | tee -a "$OUT/log.txt"
  tar czf "$OUT/data_h200.tgz" data/h200 "$LOGS"
done
echo "=== done ($(date -u +%T), $(left) s left)"
