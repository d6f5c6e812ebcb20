#!/usr/bin/env bash
# The recording run on the lent H200 (a .git in the copied tree need not match it, so the commit is passed in).
#   scripts/gpu_record.sh COMMIT PHASE [PHASE ...]
# Phases: correct (float-max check, proofs, matrix in MATRIX_SHARDS (3) shards, graph tests and five fuzz shards side by
#         side: correctness only,
#         so sharing the GPU is fine; CORRECT_S bounds it), proofs (2^32 key order), matrix (named matrix in
#         MATRIX_SHARDS parallel shards, every arm, plus the graph-capture tests),
#         graph (pytest -m gpu graph-capture tests),
#         gputests (every gpu-marked test), gputests3 (those outside tests/test_matrix.py in three processes),
#         sweep (select/full, resumable), stepprod (step + producer suites),
#         fuzz (random cases, both arms), live (the notebooks' live callbacks on CUDA),
#         radixdev (scripts/gpu_radix_dev.py: the experimental radix selects beside the default kernel),
#         ladder (scripts/gpu_latency_ladder.py: the 1-row chain's steps timed alone, beside the 1-row select).
# BUDGET_S (default 570) bounds the whole run: time-boxed phases take what is left, keeping RESERVE_S for the
# ones after them.  Everything lands in data/h200/ and is packed into $OUT/data_h200.tgz after each phase.
set -u
export DSA_LAB_COMMIT="$1"; shift
export DSA_LAB_DIRTY=0 PYTHONPATH="$PWD" PYTHONUNBUFFERED=1
OUT=${OUT:-build/gpu_out}
BUDGET_S=${BUDGET_S:-570}
T0=$(date +%s)
left() { echo $(( BUDGET_S - ($(date +%s) - T0) )); }
box() { local b=$(( $(left) - $1 )); [ "$b" -lt 20 ] && b=20; echo "$b"; }  # seconds for a phase, keeping $1 for later ones
LOGS=build/gpu_logs
mkdir -p "$OUT" data/h200 "$LOGS"
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH="$PYTHONPATH:/tmp/site"
fi
cli() { python3 -m dsa_lab.cli "$@"; }
# matrix_shards N SECONDS: the named matrix in N background processes (one seed, disjoint cases; each compiles its
# own kernels), logs in $LOGS; the caller waits, then merges with `python -m dsa_lab.verify merge-matrix`
matrix_shards() {
  local n=$1 s=$2 seed=$(( RANDOM * 32768 + RANDOM )) i
  for i in $(seq 0 $(( n - 1 ))); do
    timeout "$s" python3 -m dsa_lab.cli verify --scale gpu --seed "$seed" --matrix-shard "$i/$n" \
      --matrix-name "verify_matrix_shard$i.csv" --record data/h200 --no-progress > "$LOGS/matrix_shard$i.log" 2>&1 &
  done
}
for ph in "$@"; do
  echo "=== phase $ph ($(date -u +%T), $(left) s left)"
  case "$ph" in
    correct)
      # fuzz shards split FUZZ_MENU so that each process compiles its own kernels; matrix, graph tests
      # and proofs run beside them; every background job is bounded by timeout so the phase ends in time
      box_s=${CORRECT_S:-380}; menus=(0,6 1,7 2,8 3,9 4,5); per=$(( ${FUZZ:-100000} / ${#menus[@]} ))
      python3 scripts/gpu_float_max_check.py data/h200/float_max_check.json
      for i in "${!menus[@]}"; do
        timeout "$(( box_s + 30 ))" python3 -m dsa_lab.cli verify --scale gpu --no-matrix --fuzz "$per" \
          --fuzz-menu "${menus[$i]}" --fuzz-max-seconds "$(( box_s - 30 ))" --seed "$(( 1001 + i ))" \
          --record data/h200 --fuzz-name "fuzz_shard$i.json" --fuzz-dump data/h200/fuzz_failures \
          --no-progress > "$LOGS/fuzz_shard$i.log" 2>&1 &
      done
      matrix_shards "${MATRIX_SHARDS:-3}" "$(( box_s + 30 ))"
      timeout "$box_s" python3 -m pytest -q -m gpu -k "graph or capture" -p no:cacheprovider \
        tests/test_select_triton.py tests/test_producer.py > "$LOGS/graph_tests.log" 2>&1 &
      python3 -m dsa_lab.proofs --out data/h200/key_order_exhaustive.json
      wait
      python3 -m dsa_lab.verify merge data/h200/fuzz.json data/h200/fuzz_shard*.json && rm -f data/h200/fuzz_shard*.json
      python3 -m dsa_lab.verify merge-matrix data/h200/verify_matrix.csv data/h200/verify_matrix_shard*.csv \
        && rm -f data/h200/verify_matrix_shard*
      tail -n 4 "$LOGS"/fuzz_shard*.log; tail -n 6 "$LOGS"/matrix_shard*.log; tail -n 3 "$LOGS/graph_tests.log" ;;
    proofs) python3 -m dsa_lab.proofs --out data/h200/key_order_exhaustive.json ;;
    matrix)
      # MATRIX_SHARDS processes (same seed, disjoint cases) so that kernels compile in parallel; merged after
      box_s=$(box "${RESERVE_MATRIX_S:-60}")
      matrix_shards "${MATRIX_SHARDS:-4}" "$box_s"
      timeout "$box_s" python3 -m pytest -q -m gpu -k "graph or capture" -p no:cacheprovider \
        tests/test_select_triton.py tests/test_producer.py > "$LOGS/graph_tests.log" 2>&1 &
      wait
      python3 -m dsa_lab.verify merge-matrix data/h200/verify_matrix.csv data/h200/verify_matrix_shard*.csv \
        && rm -f data/h200/verify_matrix_shard*
      tail -n 30 "$LOGS"/matrix_shard*.log; tail -n 3 "$LOGS/graph_tests.log" ;;
    graph) python3 -m pytest -q -m gpu -k "graph or capture" -p no:cacheprovider tests/test_select_triton.py tests/test_producer.py ;;
    gputests) python3 -m pytest -q -m gpu -p no:cacheprovider ${GPU_TESTS:-tests} ;;
    gputests3)
      # every gpu-marked test outside tests/test_matrix.py (the matrix record covers its cases) in three processes,
      # each compiling its own kernels; waits on their pids (a `pgrep -f` loop once matched its own command line)
      box_s=$(box 0); pids=()
      timeout "$box_s" python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_select_triton.py \
        > "$LOGS/gputests_1.log" 2>&1 & pids+=($!)
      timeout "$box_s" python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_producer.py \
        tests/test_scores_flags_triton.py tests/test_select_radix.py > "$LOGS/gputests_2.log" 2>&1 & pids+=($!)
      timeout "$box_s" python3 -m pytest -q -m gpu -p no:cacheprovider tests \
        --ignore tests/test_select_triton.py --ignore tests/test_producer.py --ignore tests/test_scores_flags_triton.py \
        --ignore tests/test_select_radix.py --ignore tests/test_matrix.py > "$LOGS/gputests_3.log" 2>&1 & pids+=($!)
      wait "${pids[@]}"
      tail -n 2 "$LOGS"/gputests_*.log ;;
    sweep) cli sweep --suite select,full --max-seconds "$(box "${RESERVE_SWEEP_S:-250}")" --no-progress ;;
    stepprod) cli sweep --suite step,producer --max-seconds "$(box "${RESERVE_STEP_S:-170}")" --no-progress ;;
    fuzz) cli verify --scale gpu --no-matrix --fuzz "${FUZZ:-100000}" --fuzz-max-seconds "$(box 20)" \
            --record data/h200 --no-progress ;;
    live) python3 scripts/live_widgets_check.py ;;
    ladder) timeout "$(box 0)" python3 scripts/gpu_latency_ladder.py data/h200/latency_ladder.csv ;;
    radixdev) python3 scripts/gpu_radix_dev.py data/h200 "$(box "${RESERVE_RADIX_S:-20}")" ;;
    *) echo "unknown phase $ph" ;;
  esac 2>&1 | tee -a "$OUT/log.txt"
  tar czf "$OUT/data_h200.tgz" data/h200 "$LOGS"
done
echo "=== done ($(date -u +%T), $(left) s left)"
