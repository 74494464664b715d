#!/usr/bin/env bash
# How many KernelBench problems get torch.compile's kernels as their Triton start, on a GPU (under ten minutes
# a call; it resumes: run it again with the same WORK until it says done).
#   KB: a folder holding KernelBench's level1/ and level2/ (git-ignored .kernelbench/: carry it)
#   WORK (git-ignored .kt-inductor/): the imported tasks and coverage.tsv, one line per problem:
#        LEVEL/PROBLEM <tab> started|kept|refused|timeout <tab> the one line kernel-tui printed
#   LEVELS (default "1 2"), LIMIT (seconds for the whole call, default 540), PER (seconds a problem, default 240)
# Writes $OUT/coverage.tsv and $OUT/coverage.log; carry WORK to the next call to go on.
set -u
OUT=${OUT:-bench/results/raw}; mkdir -p "$OUT"; PY=${PY:-python3}; KB=${KB:-.kernelbench}; WORK=${WORK:-.kt-inductor}
mkdir -p "$WORK/tasks"; touch "$WORK/coverage.tsv"
end=$(( $(date +%s) + ${LIMIT:-540} ))
for level in ${LEVELS:-1 2}; do
  for f in $(ls "$KB/level$level"/*.py | sort -V); do
    key=level$level/$(basename "$f" .py)
    grep -q "^$key	" "$WORK/coverage.tsv" && continue
    left=$(( end - $(date +%s) ))
    [ "$left" -lt 60 ] && { echo "time is up: run again to go on" >> "$OUT/coverage.log"; break 2; }
    per=$(( left < ${PER:-240} ? left : ${PER:-240} ))
    out=$(timeout "$per" $PY -m kernel_tui import kernelbench "$f" --out "$WORK/tasks/$key" --force --start inductor 2>&1)
    rc=$?
    line=$(printf '%s\n' "$out" | grep -E '^(started|kept|refused) ' | tail -1)
    case "$rc:$line" in
      124:*) status=timeout; line="over $per s" ;;
      *:started*) status=started ;;
      *:kept*) status=kept ;;
      *) status=refused; line=${line:-$(printf '%s\n' "$out" | tail -1)} ;;
    esac
    printf '%s\t%s\t%s\n' "$key" "$status" "$(echo "$line" | tr '\t' ' ' | cut -c1-300)" >> "$WORK/coverage.tsv"
    echo "$(date +%T) $key $status" >> "$OUT/coverage.log"
  done
done
cp "$WORK/coverage.tsv" "$OUT/coverage.tsv"
awk -F'\t' '{n[$2]++} END {for (s in n) print s, n[s]}' "$WORK/coverage.tsv" >> "$OUT/coverage.log"
echo done
