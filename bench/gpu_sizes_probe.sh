#!/usr/bin/env bash
# The search's sizes-as-constants move (transforms/sizes.py) on a GPU: for each task, its start with the move
# made by the search's own Analysis.apply, one gate decision against that start (`kernel-tui eval`).
#   TASKS: task folders (default: the suite's three problems without a GEMM, from the suite's work folder
#   .kt-inductor-suite/, unpacked from .kt-inductor-suite.tgz where only that is there: carry it; where neither is
#   there, the three are imported afresh with `--start inductor` from KB, KernelBench's level1/: carry .kernelbench)
#   DEVICE (default cuda), EVAL_LIMIT (seconds a decision, default 180)
# Writes $OUT/sizes.log (one line a task) and $OUT/sizes.tgz (each task's candidate and `eval --json`).
set -u
OUT=${OUT:-bench/results/raw}; mkdir -p "$OUT"; PY=${PY:-python3}; WORK=${WORK:-.kt-inductor-suite}
[ ! -d "$WORK" ] && [ -f "$WORK.tgz" ] && tar xzf "$WORK.tgz"
if [ -z "${TASKS:-}" ]; then
  for name in 44_Average_Pooling_1D 49_Max_reduction_over_a_dimension 95_CrossEntropyLoss; do
    task=$WORK/tasks/$name; TASKS="${TASKS:-} $task"; [ -f "$task/task.json" ] && continue
    $PY -m kernel_tui import kernelbench "${KB:-.kernelbench}/level1/$name.py" --out "$task" --force --start inductor 2>&1 \
      | grep -E '^(started|kept) ' | tail -1 | sed "s/^/$(date +%T) imported: /" >> "$OUT/sizes.log"
  done
fi
R=$(mktemp -d)/sizes; mkdir -p "$R"
for task in $TASKS; do
  name=$(basename "$task"); t0=$(date +%s)
  # every kernel's sizes move, one after another: the candidate the search reaches in as many rounds
  if ! $PY - "$task/baseline.py" "$R/$name.py" > "$R/$name.moves" 2>&1 <<'EOF'
import sys
from kernel_tui.core.proposers.transforms import analyze
source = open(sys.argv[1]).read()
while moves := [a for a in analyze(source).actions() if a.kind == "sizes"]:
    print(moves[0].change)
    source = analyze(source).apply(moves[0])
open(sys.argv[2], "w").write(source)
EOF
  then echo "$name: no candidate: $(tail -1 "$R/$name.moves")" >> "$OUT/sizes.log"; continue; fi
  [ -s "$R/$name.moves" ] || { echo "$name: no sizes move applies" >> "$OUT/sizes.log"; continue; }
  timeout "${EVAL_LIMIT:-180}" $PY -m kernel_tui eval --task "$task" --candidate "$R/$name.py" --device "${DEVICE:-cuda}" \
    --json > "$R/$name.json" 2> "$R/$name.err"
  [ $? = 124 ] && echo "over ${EVAL_LIMIT:-180} s" >> "$R/$name.err"
  $PY bench/eval_line.py "$name" "$R/$name.json" >> "$OUT/sizes.log" \
    || echo "$name: eval failed: $(tail -1 "$R/$name.err")" >> "$OUT/sizes.log"
  echo "$name: $(( $(date +%s) - t0 )) s ($(paste -sd';' "$R/$name.moves"))" >> "$OUT/sizes.log"
  [ -s "$R/$name.err" ] || rm -f "$R/$name.err"
done
tar czf "$OUT/sizes.tgz" -C "$(dirname "$R")" sizes
echo done
