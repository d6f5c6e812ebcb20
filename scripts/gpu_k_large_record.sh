#!/usr/bin/env bash
# One device call (about 210 s on the H200): the bisect select's records at commit $1 into data/h200/k_large/ and
# data/h200/rerecord_bisect/, packed into $OUT/records.tgz: gpu tests, the select A/B, the k > 256 fuzz and matrix,
# the sweep's triton arm at the k = 512 / 2048 points from SM/2 rows.  Run as: bash scripts/gpu_k_large_record.sh COMMIT
set -u
export DSA_LAB_COMMIT="$1" DSA_LAB_DIRTY=0 PYTHONPATH="$PWD" PYTHONUNBUFFERED=1
L=$OUT/log.txt
T0=$(date +%s)
mkdir -p data/h200/k_large/logs
echo "=== gputests $(date -u +%T)" >> $L
timeout 110 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_select_bisect.py tests/test_select_radix.py >> $L 2>&1
echo "=== ab $(date -u +%T)" >> $L
timeout 90 python3 scripts/gpu_select_ab.py data/h200/k_large/select_ab_final.csv --contexts 16384,65536,262144 \
  --rows 1x1,32x1,128x1,32x5,128x5 --arms torch,torch_live,triton,radix --max-seconds 80 >> $L 2>&1
echo "=== correctness $(date -u +%T)" >> $L
mkdir -p data/h200/k_large
for i in 0 1 2 3 4; do
  menu=$(echo "4 5 8 5 4" | cut -d' ' -f$((i+1)))
  timeout 150 python3 -m dsa_lab.cli verify --scale gpu --no-matrix --arms triton --fuzz 20000 --fuzz-menu $menu \
    --fuzz-max-rows 160 --fuzz-max-seconds 115 --seed $((3101 + i)) --record data/h200/k_large \
    --fuzz-name fuzz_shard$i.json --fuzz-dump data/h200/k_large/fuzz_failures --no-progress > data/h200/k_large/logs/fuzz$i.txt 2>&1 &
done
timeout 200 python3 -m dsa_lab.cli verify --scale gpu --cases many,k257,k512,k1000,k2048,k_gt --seed 777 \
  --record data/h200/k_large --matrix-name verify_matrix_large_k.csv --no-progress > data/h200/k_large/logs/matrix.txt 2>&1 &
wait
python3 -m dsa_lab.bench.verify merge data/h200/k_large/fuzz_large_k.json data/h200/k_large/fuzz_shard*.json >> $L 2>&1 \
  && rm -f data/h200/k_large/fuzz_shard*
tail -n 3 data/h200/k_large/logs/fuzz*.txt data/h200/k_large/logs/matrix.txt >> $L
echo "=== sweep $(date -u +%T)" >> $L
timeout 100 python3 -m dsa_lab.cli sweep --suite select,full --arms triton --k 512,2048 --concurrency 128 --next-n 1,5 \
  --dists normal --out data/h200/rerecord_bisect --no-progress >> $L 2>&1
timeout 60 python3 -m dsa_lab.cli sweep --suite select,full --arms triton --k 512,2048 --concurrency 32 --next-n 5 \
  --dists normal --out data/h200/rerecord_bisect --no-progress >> $L 2>&1
echo "=== done $(date -u +%T) $(( $(date +%s) - T0 )) s" >> $L
cp $L data/h200/k_large/logs/run.log; tar czf $OUT/records.tgz data/h200/k_large data/h200/rerecord_bisect 2>/dev/null
tail -n 70 $L
