#!/usr/bin/env bash
# The judge across processes on a GPU, in parts of under ten minutes each (run them in this order):
#   PART=smoke      one evaluation of each case below with this tree: does the GPU path run at all
#   PART=catalogue  the attack catalogue and the boundary tests on the GPU (KT_TEST_DEVICE=cuda)
#   PART=agree      every fixture's baseline against itself, with this tree and with the in-process timing of
#                   before (OLD: a folder holding `git archive ee8a69f kernel_tui`), and vector_add at three
#                   window lengths (KERNEL_TUI_WINDOW_SECONDS)
#   PART=aa         A/A gates (bench/gate_calibration.py --parts aa), BUDGET seconds
#   PART=cost       wall per gate decision, this tree and OLD (bench/evaluator_cost.py)
# Writes under $OUT; each part's files are named after it. Usage: PART=... bench/gpu_judge.sh
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
eval_one() {  # label dir task candidate: one `kernel-tui eval`, as one JSON line with its wall time
  local label=$1 dir=$2 task=$3 cand=$4
  t0=$(date +%s.%N)
  (cd "$dir" && timeout "${EVAL_LIMIT:-200}" $PY -m kernel_tui eval --task "$ROOT/$task" --candidate "$ROOT/$cand" \
    --device cuda --json) > "$OUT/one.json" 2>> "$OUT/$label.err"
  t1=$(date +%s.%N)
  $PY -c "import json,sys; t=open(sys.argv[1]).read().strip(); d=json.loads(t) if t else {}; d['_case']=sys.argv[2]; \
d['_window']=sys.argv[5]; d['_wall']=float(sys.argv[4])-float(sys.argv[3]); print(json.dumps(d))" \
    "$OUT/one.json" "$task $cand" "$t0" "$t1" "${KERNEL_TUI_WINDOW_SECONDS:-default}" >> "$OUT/$label.jsonl" 2>> "$OUT/$label.err"
  rm -f "$OUT/one.json"
}
case "$PART" in
  smoke)
    cases | while read -r task cand; do eval_one smoke "$ROOT" "$task" "$cand"; done ;;
  catalogue)
    KT_TEST_DEVICE=cuda timeout "${LIMIT:-540}" $PY -m pytest -q -n 4 -p no:cacheprovider ${TESTS:-tests/core/evaluator/test_adversarial.py \
      tests/core/evaluator/test_judge_boundary.py} > "$OUT/catalogue.txt" 2>&1 ;;
  agree)
    for f in fixtures/*/; do
      name=$(basename "$f")
      eval_one agree-new "$ROOT" "fixtures/$name" "fixtures/$name/baseline.py"
      PYTHONPATH="$ROOT/$OLD:${PYTHONPATH:-}" eval_one agree-old "$ROOT/$OLD" "fixtures/$name" "fixtures/$name/baseline.py"
    done
    for w in 1e-5 2e-3; do
      KERNEL_TUI_WINDOW_SECONDS=$w eval_one agree-windows "$ROOT" fixtures/vector_add fixtures/vector_add/baseline.py
      KERNEL_TUI_WINDOW_SECONDS=$w eval_one agree-windows "$ROOT" fixtures/vector_add bench/candidates/vector_add_block1024.py
    done ;;
  aa)
    $PY bench/gate_calibration.py --device cuda --parts aa --aa-fixtures "${FIXTURES:-vector_add,matmul}" \
      --budget "${BUDGET:-480}" --out "$OUT/aa" > "$OUT/aa.log" 2>&1 ;;
  cost)
    $PY bench/evaluator_cost.py --task vector_add --count 4 --device cuda --out "$OUT/cost-new" > "$OUT/cost.log" 2>&1
    # the script puts its own folder's parent first on the path: a copy in OLD runs OLD's kernel_tui
    mkdir -p "$OLD/bench" && cp bench/evaluator_cost.py "$OLD/bench/" && ln -sfn "$ROOT/fixtures" "$OLD/fixtures"
    (cd "$OLD" && $PY bench/evaluator_cost.py --task vector_add --count 4 --device cuda --out "$OUT/cost-old") \
      >> "$OUT/cost.log" 2>&1 ;;
esac
# the judges' and workers' console logs, for a look at anything that went wrong
(cd /tmp/kt-work && find . \( -name "judge.err" -o -name "stderr.log" \) -size +0 | head -200 \
  | tar -czf "$OUT/logs-$PART.tar.gz" -T - 2>/dev/null)
echo done
