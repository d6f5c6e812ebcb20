#!/usr/bin/env bash
# The recording run on the lent H200 (the tree is copied there without .git, so the commit is passed in).
#   scripts/gpu_record.sh COMMIT PHASE [PHASE ...]
# Phases: proofs (2^32 key order), verify (matrix + fuzz, both arms), gputests (pytest -m gpu),
#         sweep (select/full suites, resumable), stepprod (step + producer suites), live (notebook live callbacks).
# Everything lands in data/h200/ and is packed into $OUT/data_h200.tgz to be copied back.
set -u
export DSA_LAB_COMMIT="$1"; shift
export DSA_LAB_DIRTY=0 PYTHONPATH="$PWD" PYTHONUNBUFFERED=1
OUT=${OUT:-build/gpu_out}
mkdir -p "$OUT" data/h200
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH="$PYTHONPATH:/tmp/site"
fi
for ph in "$@"; do
  echo "=== phase $ph ($(date -u +%T))"
  case "$ph" in
    proofs) python3 -m dsa_lab.proofs --out data/h200/key_order_exhaustive.json ;;
    verify) python3 -m dsa_lab.cli verify --scale gpu --record data/h200 --fuzz "${FUZZ:-100000}" --no-progress ;;
    gputests) python3 -m pytest -q -m gpu -p no:cacheprovider ${GPU_TESTS:-tests/test_keys.py tests/test_select_triton.py tests/test_scores_flags_triton.py tests/test_producer.py tests/test_bench.py} ;;
    sweep) python3 -m dsa_lab.cli sweep --suite select,full --max-seconds "${SWEEP_S:-300}" --no-progress ;;
    stepprod) python3 -m dsa_lab.cli sweep --suite step,producer --max-seconds "${SP_S:-200}" --no-progress ;;
    live) python3 scripts/live_widgets_check.py ;;
    *) echo "unknown phase $ph" ;;
  esac 2>&1 | tee -a "$OUT/log.txt"
  tar czf "$OUT/data_h200.tgz" data/h200
done
echo "=== done ($(date -u +%T))"
