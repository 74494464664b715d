#!/usr/bin/env bash
# A suite from torch.compile's kernels, on a GPU: each problem imported with `--start inductor` (the problems that
# stay eager are left out and listed), then the built-in search for ROUNDS rounds from that start, scored against
# eager and torch.compile (`kernel-tui suite`, which resumes: run it again with the same WORK until it says done).
#   KB: KernelBench's level1/ and level2/ (git-ignored .kernelbench/: carry it)
#   WORK (git-ignored .kt-inductor-suite/): tasks/ (one folder a problem), eager.tsv (those left out and why), suite/
#   PROBLEMS: "level1/19_ReLU level2/12_Gemm_Multiply_LeakyReLU ..." (default: the twelve below, which fit an
#   H100's memory: KernelBench's elementwise level-1 problems, 4096 x 393216, need 73 GiB, only an H200 has it;
#   set but empty: no imports, only the suite over the tasks already in WORK),
#   ROUNDS (default 5), LIMIT (seconds for the whole call, default 540; imports are cut at a third of it), DEVICE (default cuda)
# Writes $OUT/suite.log (each line with its time), $OUT/suite.json, $OUT/suite-report.md, $OUT/eager.tsv and
# $OUT/suite-work.tgz (WORK without its workspaces' scratch and compile caches: the machine keeps nothing between
# calls, so save it here as WORK.tgz, git-ignored, and carry that to the next call, which unpacks it; WORK itself
# soon outgrows what a call may carry).
set -u
OUT=${OUT:-bench/results/raw}; mkdir -p "$OUT"; PY=${PY:-python3}; KB=${KB:-.kernelbench}
WORK=${WORK:-.kt-inductor-suite}
[ ! -d "$WORK" ] && [ -f "$WORK.tgz" ] && tar xzf "$WORK.tgz"
mkdir -p "$WORK/tasks"; touch "$WORK/eager.tsv"
PROBLEMS=${PROBLEMS-"level1/1_Square_matrix_multiplication_ level1/2_Standard_matrix_multiplication_
  level1/9_Tall_skinny_matrix_multiplication_ level1/17_Matmul_with_transposed_B level1/44_Average_Pooling_1D
  level1/49_Max_reduction_over_a_dimension level1/95_CrossEntropyLoss level2/12_Gemm_Multiply_LeakyReLU
  level2/40_Matmul_Scaling_ResidualAdd level2/59_Matmul_Swish_Scaling level2/76_Gemm_Add_ReLU level2/86_Matmul_Divide_GELU"}
export PYTHONUNBUFFERED=1
start=$(date +%s); limit=${LIMIT:-540}
for key in $PROBLEMS; do
  name=$(basename "$key"); task=$WORK/tasks/$name
  [ -f "$task/task.json" ] || grep -q "^$key	" "$WORK/eager.tsv" || {
    [ $(( $(date +%s) - start )) -gt $(( limit / 3 )) ] && break
    line=$($PY -m kernel_tui import kernelbench "$KB/$key.py" --out "$task.tmp" --force --start inductor 2>&1 \
           | grep -E '^(started|kept) ' | tail -1)
    case "$line" in
      started*) mv "$task.tmp" "$task" ;;
      *) rm -rf "$task.tmp"; printf '%s\t%s\n' "$key" "${line:-import failed}" >> "$WORK/eager.tsv" ;;
    esac
    echo "$(date +%T) $key ${line%%:*}" >> "$OUT/suite.log"
  }
done
left=$(( limit - ($(date +%s) - start) - 30 ))  # 30 s kept for packing WORK
[ "$left" -gt 60 ] && timeout "$left" $PY -m kernel_tui suite "$WORK/tasks" --proposer search --max-steps "${ROUNDS:-5}" \
  --out "$WORK/suite" --device "${DEVICE:-cuda}" --runs 3 2>&1 | while IFS= read -r line; do echo "$(date +%T) $line"; done \
  >> "$OUT/suite.log"
cp "$WORK/suite/suite.json" "$WORK/suite/suite-report.md" "$OUT/" 2>/dev/null
cp "$WORK/eager.tsv" "$OUT/eager.tsv"
tar czf "$OUT/suite-work.tgz" --exclude="$WORK/suite/workspaces/*/.work" "$WORK"
echo done
