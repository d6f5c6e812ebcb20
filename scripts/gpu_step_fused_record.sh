#!/usr/bin/env bash
# One device call: the fused decode step's records at commit $1, packed into $OUT/records.tgz: the producer's GPU
# tests (the fused epilogue's included), the step sweep (fused, staged and upstream compositions, every point), the
# producer sweep's triton arm, and a same-process producer A/B of the plain kernel against the fused step's launch
# of it (`dsa-lab ab --stage producer`; ARMS adds arms, e.g. pkg_NAME+f for a candidate tree .ab/ab/dsa_lab_NAME,
# passed with carry).  Run as: bash scripts/gpu_step_fused_record.sh COMMIT
set -u
export DSA_LAB_COMMIT="$1" DSA_LAB_DIRTY=0 PYTHONPATH="$PWD" PYTHONUNBUFFERED=1
R=data/h200/step_fused
L=$R/logs/run.log
mkdir -p $R/logs
T0=$(date +%s)
echo "=== gputests $(date -u +%T)" >> $L
timeout 80 python3 -m pytest -q -p no:cacheprovider tests/test_producer.py -k "gpu_fused or gpu_decode_step or gpu_cuda_graph or producer_scores or fused_sanitize" >> $L 2>&1
echo "=== step sweep $(date -u +%T)" >> $L
timeout 120 python3 -m dsa_lab.cli sweep --suite step --out $R/step --max-seconds 110 --no-progress >> $L 2>&1
echo "=== producer sweep $(date -u +%T)" >> $L
timeout 60 python3 -m dsa_lab.cli sweep --suite producer --arms triton --out $R/producer --max-seconds 50 \
  --no-progress >> $L 2>&1
echo "=== producer A/B $(date -u +%T)" >> $L
timeout 150 python3 -m dsa_lab.cli ab $R/producer_ab_epilogue.csv --stage producer --old .ab/ab --rows 128x3,128x5 \
  --widths 131072 --arms "new,new+f${ARMS:+,$ARMS}" --reps 1 >> $L 2>&1
echo "=== done $(date -u +%T) $(( $(date +%s) - T0 )) s" >> $L
tar czf $OUT/records.tgz $R 2>/dev/null
tail -n 45 $L
