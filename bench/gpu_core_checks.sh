#!/usr/bin/env bash
# Core-engine checks on a GPU machine: every fixture's task check; vector_add's baseline against itself
# (A/A) and a real change (block 256 -> 1024) under each timing method; the independent re-test under
# each method; the adversarial catalogue on the GPU. Writes everything under $OUT (default
# bench/results/raw). Usage: bench/gpu_core_checks.sh
set -u
OUT=${OUT:-bench/results/raw}
mkdir -p "$OUT"
PY=${PY:-python3}
kt() { timeout "${T:-300}" $PY -m kernel_tui "$@"; }
{
  date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
  $PY -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
} > "$OUT/environment.txt" 2>&1
for f in fixtures/*/; do kt check-task "$f" --device cuda --json; done > "$OUT/check_tasks.jsonl" 2>&1
kt eval --task fixtures/vector_add --candidate fixtures/vector_add/baseline.py --device cuda > "$OUT/vector_add_aa.txt" 2>&1
for method in auto flush graph; do
  d=$(mktemp -d); cp fixtures/vector_add/*.py "$d/"
  $PY -c "import json,sys; t=json.load(open('fixtures/vector_add/task.json')); t['benchmark']['timing']=sys.argv[2]; json.dump(t, open(sys.argv[1]+'/task.json','w'))" "$d" "$method"
  for cand in fixtures/vector_add/baseline.py bench/candidates/vector_add_block1024.py; do
    kt eval --task "$d" --candidate "$cand" --device cuda --json
  done > "$OUT/evals_$method.jsonl" 2>&1
  [ "$method" = auto ] || kt compare --task "$d" --incumbent fixtures/vector_add/baseline.py \
    --candidate bench/candidates/vector_add_block1024.py --runs 5 --device cuda > "$OUT/compare_$method.txt" 2>&1
done
KT_TEST_DEVICE=cuda timeout 300 $PY -m pytest -q -p no:cacheprovider -n 4 tests/core/evaluator/test_adversarial.py > "$OUT/adversarial_gpu.txt" 2>&1
echo done
