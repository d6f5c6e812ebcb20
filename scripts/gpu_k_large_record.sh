#!/usr/bin/env bash
# The bisect select's records at commit $1, in two device calls, packed into $OUT/records.tgz:
#   bash scripts/gpu_k_large_record.sh COMMIT ab      (about 410 s) gpu tests; the select A/B (data/h200/k_large/
#       select_ab_final.csv); the value distributions (select_ab_dists.csv); the A/B against an older package
#       (select_ab_${OLD_TAG:-old}_k*.csv; the package unpacked as ${OLD_DIR:-.ab/ab_bis}/dsa_lab_old, `carry: [".ab"]`),
#       all three by `dsa-lab ab --stage select`; then, unless NO_WARMUP is set, the warmup and cold-start records
#       (scripts/gpu_record.sh warmup coldstart).  (The bisect kernel's stage costs, bisect_stages_COMMIT.csv, came
#       from scripts/gpu_bisect_stages.py, deleted after 0ae5745.)
#   bash scripts/gpu_k_large_record.sh COMMIT record  (about 450 s) the k > 256 fuzz and matrix; the sweep's triton arm
#       at the k = 512 / 2048 points of every row count (data/h200/rerecord_bisect/, merged afterwards by
#       python -m dsa_lab.bench.merge); the fuzz's seeds are FUZZ_SEED (default 3101) and the four after it
# The records go under the card's data folder (data/h200, data/h100: `dsa_lab.bench.data.gpu_slug`).
set -u
case "${2:-}" in ab|record) ;; *) echo "usage: $0 COMMIT ab|record" >&2; exit 2 ;; esac
export DSA_LAB_COMMIT="$1" DSA_LAB_DIRTY=0 PYTHONPATH="$PWD" PYTHONUNBUFFERED=1
G=data/$(python3 -c "import torch; from dsa_lab.bench.data import gpu_slug; print(gpu_slug(torch.cuda.get_device_name()))")
D=$G/k_large
mkdir -p $D/logs
L=$OUT/log.txt
T0=$(date +%s)
if [ "$2" = ab ]; then
  echo "=== gputests $(date -u +%T)" >> $L
  timeout 110 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_select_bisect.py tests/test_select_radix.py >> $L 2>&1
  echo "=== ab $(date -u +%T)" >> $L
  timeout 80 python3 -m dsa_lab.cli ab $D/select_ab_final.csv --stage select --k 512,2048 \
    --widths 16384,65536,262144 --rows 1x1,32x1,128x1,32x5,128x5 --arms torch,torch_live,triton,radix --reps 2 \
    --max-seconds 70 >> $L 2>&1
  echo "=== dists $(date -u +%T)" >> $L
  timeout 55 python3 -m dsa_lab.cli ab $D/select_ab_dists.csv --stage select --k 2048,512 --widths 262144 \
    --rows 128x1,32x5,128x5 --dist normal,shifted,equal,nan1pct,ramp --arms torch,triton --reps 2 \
    --max-seconds 45 >> $L 2>&1
  echo "=== old $(date -u +%T)" >> $L
  for k in 2048 512; do
    timeout 50 python3 -m dsa_lab.cli ab $D/select_ab_${OLD_TAG:-old}_k$k.csv --old "${OLD_DIR:-.ab/ab_bis}" \
      --stage select --k $k --rows 1,5,32,128,160,640 --widths 16384,65536,262144 --arms old,new --reps 2 \
      --max-seconds 42 >> $L 2>&1
  done
  if [ -z "${NO_WARMUP:-}" ]; then
    echo "=== warmup, coldstart $(date -u +%T)" >> $L
    BUDGET_S=230 OUT=$OUT/rec bash scripts/gpu_record.sh "$1" warmup coldstart >> $L 2>&1
  fi
else
  echo "=== correctness $(date -u +%T)" >> $L
  for i in 0 1 2 3 4; do
    menu=$(echo "4 5 10 5 8" | cut -d' ' -f$((i+1)))
    timeout 150 python3 -m dsa_lab.cli verify --scale gpu --no-matrix --arms triton --fuzz 20000 --fuzz-menu $menu \
      --fuzz-max-rows 160 --fuzz-max-seconds 115 --seed $((${FUZZ_SEED:-3101} + i)) --record $D \
      --fuzz-name fuzz_shard$i.json --fuzz-dump $D/fuzz_failures --no-progress > $D/logs/fuzz$i.txt 2>&1 &
  done
  timeout 280 python3 -m dsa_lab.cli verify --scale gpu --cases many,k257,k512,k1000,k2048,k_gt --seed 777 \
    --record $D --matrix-name verify_matrix_large_k.csv --no-progress > $D/logs/matrix.txt 2>&1 &
  wait
  python3 -m dsa_lab.bench.verify merge $D/fuzz_large_k.json $D/fuzz_shard*.json >> $L 2>&1 && rm -f $D/fuzz_shard*
  tail -n 3 $D/logs/fuzz*.txt $D/logs/matrix.txt >> $L
  echo "=== sweep $(date -u +%T)" >> $L
  timeout 230 python3 -m dsa_lab.cli sweep --suite select,full --arms triton --k 512,2048 --concurrency 1,32,128 \
    --next-n 1,5 --dists normal --out $G/rerecord_bisect --no-progress >> $L 2>&1
fi
echo "=== done $2 $(date -u +%T) $(( $(date +%s) - T0 )) s" >> $L
cp $L $D/logs/run_$2.log; tar czf $OUT/records.tgz --exclude=fuzz_failures $D $G/rerecord_bisect $G/warmup.* $G/coldstart.* \
  build/gpu_logs 2>/dev/null
tail -n 80 $L
