#!/usr/bin/env bash
# The PyTorch sides timed fairly, on a GPU, in parts of under ten minutes each (run them in order):
#   PART=copy     the copy's share of eager's time on imported problems (bench/pytorch_copy_share.py): S of
#                 copying eager over returning eager; near 2 for one-input elementwise ops, near 1 for a matmul
#   PART=suite    the suite of 2026-12-01 scored again with the fair PyTorch sides (bench/kernelbench/suite.py;
#                 it resumes, so run it again until it says done), PROBLEMS picks a subset (default: WORK's
#                 problems.txt); with no WORK/suite yet it starts from RESUME, the committed folder of the last run
#   PART=residual what a window adds beyond its calls, per side (bench/window_residual.py), for the judge
# KB: a folder holding KernelBench's level1/ and level2/ (git-ignored .kernelbench/: carry it). WORK (git-ignored
# .kt-fair/) holds the imported tasks and the suite's workspaces: carry it to the next call to resume there.
# Writes under $OUT; each part's files are named after it. Usage: PART=... bench/gpu_fair.sh
set -u
OUT=${OUT:-bench/results/raw}; mkdir -p "$OUT"; PY=${PY:-python3}; PART=${PART:-copy}; KB=${KB:-.kernelbench}
export PYTHONUNBUFFERED=1
WORK=${WORK:-.kt-fair}; mkdir -p "$WORK"
COPY_PROBLEMS=${COPY_PROBLEMS:-"19_ReLU 26_GELU_ 23_Softmax 36_RMSNorm_ 1_Square_matrix_multiplication_"}
case "$PART" in
  copy)
    for p in $COPY_PROBLEMS; do
      f=$(ls "$KB"/level1/"$p".py "$KB"/level2/"$p".py 2>/dev/null | head -1)
      [ -n "$f" ] || { echo "no problem $p in $KB" >> "$OUT/copy.err"; continue; }
      [ -d "$WORK/tasks/$p" ] || $PY -m kernel_tui import kernelbench "$f" --out "$WORK/tasks/$p" >> "$OUT/copy.log" 2>&1
    done
    timeout "${LIMIT:-540}" $PY bench/pytorch_copy_share.py --tasks "$WORK/tasks" --device cuda --runs ${RUNS:-3} \
      --out "$OUT/copy.json" >> "$OUT/copy.log" 2>&1 ;;
  suite)
    # a fresh machine resumes from the committed folder (imported tasks, candidates, finished results)
    [ -d "$WORK/suite" ] || tar xzf "${RESUME:-bench/results/2026-12-02-h200-fair/raw/kt-fair-suite.tgz}" -C "$WORK"
    [ -z "${PROBLEMS:-}" ] && [ -f "$WORK/problems.txt" ] && PROBLEMS=$(cat "$WORK/problems.txt")
    timeout "${LIMIT:-540}" $PY bench/kernelbench/suite.py --kernelbench "$KB" --out "$WORK/suite" --device cuda \
      --runs 3 ${PROBLEMS:+--problems $PROBLEMS} 2>&1 | while IFS= read -r line; do echo "$(date +%T) $line"; done \
      >> "$OUT/suite.log"  # each line with its time: where a problem's minutes go
    cp "$WORK/suite/suite/suite.json" "$WORK/suite/suite/suite-report.md" "$OUT/" 2>/dev/null
    # the suite's folder without its caches, to resume from on a fresh machine: commit it as the next RESUME
    tar czf "$OUT/kt-fair-suite.tgz" --exclude=.work -C "$WORK" suite $(cd "$WORK" && ls problems.txt 2>/dev/null) ;;
  residual)
    # FIXTURE and CANDIDATE pick the pair; KERNEL_TUI_FLUSH=read|write how the L2 is emptied (timing.py)
    fx=${FIXTURE:-vector_add}; name=$fx-${KERNEL_TUI_FLUSH:-write}
    timeout "${LIMIT:-540}" $PY bench/window_residual.py --task "fixtures/$fx" \
      --candidate "${CANDIDATE:-bench/candidates/vector_add_block1024.py}" --ks 1,2,4,8,16,32 --pairs 10 --device cuda \
      --out "$OUT/residual-$name.json" >> "$OUT/residual-$name.log" 2>&1 ;;
esac
echo done
