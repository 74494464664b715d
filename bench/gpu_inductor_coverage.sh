#!/usr/bin/env bash
# How many KernelBench problems get torch.compile's kernels as their Triton start, on a GPU (under ten minutes
# a call; it resumes: run it again with the same WORK until it says done).
#   KB: a folder holding KernelBench's level1/ and level2/ (git-ignored .kernelbench/: carry it)
#   WORK (git-ignored .kt-inductor/): the imported tasks, what Inductor generated for each (captures/, the JSON
#        of `start-from-inductor --keep-capture`: test data for the rewrite) and coverage.tsv, one line a problem:
#        LEVEL/PROBLEM <tab> started|kept|refused|timeout|not imported <tab> the one line kernel-tui printed
#   LEVELS (default "1 2"), PROBLEMS (stems; default every problem of LEVELS), LIMIT (seconds for the whole call,
#   default 540), PER (seconds a problem, default 240), JOBS (problems at once, default 4: compiling and
#   autotuning are mostly CPU work; the correctness checks share the GPU, which coverage does not time; a check
#   that finds too little memory free beside the others, or a compile that runs out of it, is taken again alone
#   at the end)
# Writes $OUT/coverage.tsv, $OUT/coverage.log and $OUT/captures.tgz; carry WORK to the next call to go on.
set -u
OUT=${OUT:-bench/results/raw}; mkdir -p "$OUT"; PY=${PY:-python3}; KB=${KB:-.kernelbench}; WORK=${WORK:-.kt-inductor}
mkdir -p "$WORK/tasks" "$WORK/captures"; touch "$WORK/coverage.tsv"
export DEVICE=${DEVICE:-cuda} OUT PY WORK PER=${PER:-240} END=$(( $(date +%s) + ${LIMIT:-540} ))

imported() {  # import one problem file (eager), unless done; a problem the import refuses is counted with its line
  f=$1; level=$(basename "$(dirname "$f")"); key=$level/$(basename "$f" .py); task=$WORK/tasks/$key
  [ -f "$task/task.json" ] && return 0
  grep -q "^$key	" "$WORK/coverage.tsv" && return 1
  [ "$(( END - $(date +%s) ))" -lt 60 ] && return 1
  said=$($PY -m kernel_tui import kernelbench "$f" --out "$task" --force 2>&1)
  [ -f "$task/task.json" ] && return 0
  printf '%s\tnot imported\t%s\n' "$key" "$(printf '%s\n' "$said" | tail -1 | tr '\t' ' ' | cut -c1-300)" \
    >> "$WORK/coverage.tsv"
  echo "$(date +%T) $key not imported" >> "$OUT/coverage.log"; return 1
}

one() {  # one problem file: imported, then torch.compile's kernels as the start; one line to coverage.tsv
  f=$1; level=$(basename "$(dirname "$f")"); key=$level/$(basename "$f" .py)
  left=$(( END - $(date +%s) )); [ "$left" -lt 60 ] && exit 0
  per=$(( left < PER ? left : PER )); task=$WORK/tasks/$key
  imported "$f" || return 0
  out=$(timeout "$per" $PY -m kernel_tui start-from-inductor "$task" --device "${DEVICE:-cuda}" --timeout "$per" \
        --keep-capture "$WORK/captures/${key/\//_}.json" 2>&1)
  rc=$?
  line=$(printf '%s\n' "$out" | grep -E '^(started|kept) ' | tail -1)
  case "$rc:$line" in
    124:*) status=timeout; line="over $per s" ;;
    *:started*) status=started ;;
    *:kept*) status=kept ;;
    *) status=refused; line=${line:-$(printf '%s\n' "$out" | tail -1)} ;;
  esac
  # a check that found too little GPU memory free beside the other problems', or a compile that ran out of it
  # (torch's OutOfMemoryError, or the driver's own word through an AcceleratorError), is taken again alone,
  # after them
  if [ -z "${ALONE:-}" ] && [[ "$line" == *"does not fit in device memory"* || "$line" == *OutOfMemoryError* \
        || "$line" == *"CUDA error: out of memory"* ]]; then
    echo "$f" >> "$WORK/alone.txt"; echo "$(date +%T) $key again alone: too little memory beside the others" >> "$OUT/coverage.log"
    return 0
  fi
  printf '%s\t%s\t%s\n' "$key" "$status" "$(echo "$line" | tr '\t' ' ' | cut -c1-300)" >> "$WORK/coverage.tsv"
  echo "$(date +%T) $key $status" >> "$OUT/coverage.log"
}
export -f imported one

for level in ${LEVELS:-1 2}; do
  for f in $(ls "$KB/level$level"/*.py | sort -V); do
    stem=$(basename "$f" .py)
    [ -n "${PROBLEMS:-}" ] && ! [[ " $PROBLEMS " == *" $stem "* ]] && continue
    grep -q "^level$level/$stem	" "$WORK/coverage.tsv" && continue
    grep -qxF "$f" "$WORK/alone.txt" 2>/dev/null || echo "$f"  # those left to run alone come after the rest
  done
done | xargs -P "${JOBS:-4}" -I{} bash -c 'one "$1"' _ {}
if [ -s "$WORK/alone.txt" ]; then
  sort -u "$WORK/alone.txt" > "$WORK/alone.todo"; : > "$WORK/alone.txt"
  # their imports need no GPU: all of them at once first, so that the GPU does not wait on one
  xargs -P "${JOBS:-4}" -I{} bash -c 'imported "$1"' _ {} < "$WORK/alone.todo"
  ALONE=1 xargs -P 1 -I{} bash -c 'one "$1"' _ {} < "$WORK/alone.todo"
  # those the time cut off are taken again by the next call
  while read -r f; do key=$(basename "$(dirname "$f")")/$(basename "$f" .py)
    grep -q "^$key	" "$WORK/coverage.tsv" || echo "$f" >> "$WORK/alone.txt"; done < "$WORK/alone.todo"
fi
[ "$(( END - $(date +%s) ))" -lt 60 ] && echo "time is up: run again to go on" >> "$OUT/coverage.log"
cp "$WORK/coverage.tsv" "$OUT/coverage.tsv"
tar czf "$OUT/captures.tgz" -C "$WORK" captures
awk -F'\t' '{n[$2]++} END {for (s in n) print s, n[s]}' "$WORK/coverage.tsv" >> "$OUT/coverage.log"
echo done
