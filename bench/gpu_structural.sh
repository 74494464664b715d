#!/usr/bin/env bash
# The search's structural moves on a GPU, one gate decision each against their incumbent (under ten minutes):
# the rewrites in bench/candidates/structural/ (made by the search's own Analysis.apply; tests keep the TMA
# and split-K ones equal to what the rewrite gives today; the fixture's persistent ones carry PROGRAMS_PER_SM = 7,
# its blocks per SM on an H200). best_matmul_*.py against the swept best
# (bench/results/2026-11-29-h200-benchmark/sweep/best_matmul.py), matmul_*.py against the fixture's baseline,
# searched_*.py (moves by hand the search does not make yet) against the live search's best of 2026-12-03.
# Writes $OUT/structural.tgz (NAME.json: kernel-tui eval --json) and $OUT/structural.log.
# Usage: bench/gpu_structural.sh [NAME ...]   (default: every candidate there)
set -u
OUT=${OUT:-bench/results/raw}; mkdir -p "$OUT"; PY=${PY:-python3}; D=bench/candidates/structural
R=$(mktemp -d)/structural; mkdir -p "$R"  # the JSON files travel back as one tarball (the device returns few files)
names=${*:-$(cd "$D" && ls *.py | sed 's/\.py$//')}
for name in $names; do
  inc=fixtures/matmul/baseline.py
  case "$name" in
    best_matmul_*) inc=bench/results/2026-11-29-h200-benchmark/sweep/best_matmul.py ;;
    searched_*) inc=bench/results/2026-12-03-h200-search-matmul/raw/best.py ;;  # the live search's best
  esac
  t0=$(date +%s)
  timeout "${EVAL_LIMIT:-150}" $PY -m kernel_tui eval --task fixtures/matmul --incumbent "$inc" --candidate "$D/$name.py" \
    --device cuda --json > "$R/$name.json" 2> "$R/$name.err"
  rc=$?
  $PY bench/eval_line.py "$name" "$R/$name.json" >> "$OUT/structural.log" || echo "$name rc=$rc" >> "$OUT/structural.log"
  echo "$name: $(( $(date +%s) - t0 )) s" >> "$OUT/structural.log"
  [ -s "$R/$name.err" ] || rm -f "$R/$name.err"
done
tar czf "$OUT/structural.tgz" -C "$(dirname "$R")" structural
echo done
