#!/usr/bin/env bash
# A/A gates of vector_add's baseline against itself under each timing method, plus the block-1024 change
# under graph timing. Writes JSON lines under $OUT. Usage: bench/gpu_gate_aa.sh [REPEATS]
set -u
OUT=${OUT:-bench/results/raw}; mkdir -p "$OUT"; PY=${PY:-python3}; N=${1:-3}
for method in graph flush auto; do
  d=$(mktemp -d); cp fixtures/vector_add/*.py "$d/"
  $PY -c "import json,sys; t=json.load(open('fixtures/vector_add/task.json')); t['benchmark']['timing']=sys.argv[2]; json.dump(t, open(sys.argv[1]+'/task.json','w'))" "$d" "$method"
  for i in $(seq "$N"); do
    timeout 300 $PY -m kernel_tui eval --task "$d" --candidate fixtures/vector_add/baseline.py --device cuda --json
  done > "$OUT/aa_$method.jsonl" 2>&1
  [ "$method" = graph ] && timeout 300 $PY -m kernel_tui eval --task "$d" --candidate bench/candidates/vector_add_block1024.py --device cuda --json > "$OUT/block1024_$method.jsonl" 2>&1
done
echo done
