#!/bin/bash
# Alternate before/after runs of scripts/bench_gpu.py: ab.sh ROUNDS BENCH_ARGS...
# /tmp/before/infill: the working tree's infill/ with energies/conditionals.py, energies/masked_lm.py and
# lm/models.py taken from commit 940c5ac; /tmp/beforeroot/scripts/bench_gpu.py: that commit's script (with
# corpora/ linked beside it). Outputs go to /tmp/ab/.
rounds=$1; shift
for i in $(seq 1 $rounds); do
  PYTHONPATH=/tmp/before timeout 600 python /tmp/beforeroot/scripts/bench_gpu.py \
    --model /work/shared/models/infill-dev-minilm-mlm "$@" --out /tmp/ab/before-$i > /tmp/ab/before-$i.log 2>&1
  timeout 600 python /work/main/scripts/bench_gpu.py "$@" --out /tmp/ab/after-$i > /tmp/ab/after-$i.log 2>&1
done
