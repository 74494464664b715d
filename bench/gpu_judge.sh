#!/usr/bin/env bash
# The judge across processes on a GPU. PART=smoke: one evaluation of each fixture case, the new design only.
# PART=agree: each case twice with the new design and twice with the in-process timing of before (OLD, a
# folder holding kernel_tui as it was: `git archive <commit> kernel_tui | tar -x -C .old`).
# Writes JSON lines under $OUT. Usage: PART=smoke|agree bench/gpu_judge.sh
set -u
OUT=${OUT:-bench/results/raw}; mkdir -p "$OUT"; PY=${PY:-python3}; PART=${PART:-smoke}; OLD=${OLD:-.old}
export PYTHONUNBUFFERED=1 KERNEL_TUI_KEEP_WORKDIR=1
ROOT=$(pwd)
mkdir -p /tmp/kt-work; export TMPDIR=/tmp/kt-work  # the evaluators' folders, kept: their judges' logs
cases() {  # task candidate
  echo "fixtures/vector_add fixtures/vector_add/baseline.py"
  echo "fixtures/vector_add bench/candidates/vector_add_block1024.py"
  echo "fixtures/matmul fixtures/matmul/baseline.py"
}
run_cases() {  # label repeats dir
  local label=$1 n=$2 dir=$3
  for i in $(seq "$n"); do
    cases | while read -r task cand; do
      t0=$(date +%s.%N)
      (cd "$dir" && timeout ${EVAL_LIMIT:-200} $PY -m kernel_tui eval --task "$ROOT/$task" --candidate "$ROOT/$cand" --device cuda --json) \
        > "$OUT/one.json" 2>> "$OUT/$label.err"
      t1=$(date +%s.%N)
      $PY -c "import json,sys; d=json.load(open(sys.argv[1])) if open(sys.argv[1]).read().strip() else {}; d['_case']=sys.argv[2]; d['_wall']=float(sys.argv[4])-float(sys.argv[3]); print(json.dumps(d))" \
        "$OUT/one.json" "$task $cand" "$t0" "$t1" >> "$OUT/$label.jsonl" 2>> "$OUT/$label.err"
    done
  done
  rm -f "$OUT/one.json"
}
if [ "$PART" = smoke ]; then
  run_cases new 1 "$ROOT"
else
  run_cases new 2 "$ROOT"
  PYTHONPATH="$ROOT/$OLD:${PYTHONPATH:-}" run_cases old 2 "$ROOT/$OLD"
fi
# the judges' and workers' console logs, for a look at anything that went wrong
(cd /tmp/kt-work && find . -name "judge.err" -size +0 -o -name "stderr.log" -size +0 | head -200 | tar -czf "$OUT/logs.tar.gz" -T - 2>/dev/null)
echo done
