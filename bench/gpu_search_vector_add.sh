#!/usr/bin/env bash
# A 25-step built-in search run on vector_add on the GPU, its final re-test against the baseline, and
# torch.add timed the same way against the best found. Stops the search at a time limit (it then
# finalizes with the rounds it had) so the whole script fits one GPU run of ten minutes. Writes under $OUT.
set -u
OUT=${OUT:-bench/results/raw}; mkdir -p "$OUT"; PY=${PY:-python3}; LIMIT=${LIMIT:-300}
ws=${WS:-$(mktemp -d)/vector_add-search}
start=$(date +%s)
timeout -s TERM "$LIMIT" $PY -m kernel_tui run fixtures/vector_add --headless --proposer search --max-steps 25 \
  --device cuda --workspace "$ws" > "$OUT/run.log" 2>&1
echo "search exit $? after $(( $(date +%s) - start )) s" >> "$OUT/run.log"
if [ ! -f "$ws/final-comparison.json" ]; then  # stopped at the limit: finish with the rounds done
  used=$(wc -l < "$ws/trajectory.jsonl")
  $PY -m kernel_tui run "$ws" --headless --max-steps "$used" --device cuda >> "$OUT/run.log" 2>&1
fi
$PY -m kernel_tui compare --task fixtures/vector_add --incumbent "$ws/best.py" \
  --candidate bench/candidates/vector_add_torch_add.py --runs 5 --device cuda --no-policy > "$OUT/best_vs_torch_add.txt" 2>&1
$PY -m kernel_tui history "$ws" --all >> "$OUT/run.log" 2>&1
for f in report.md final-comparison.json trajectory.jsonl run_summary.json; do cp "$ws/$f" "$OUT/" 2>/dev/null; done
tar czf "$OUT/workspace.tar.gz" --exclude=.work -C "$(dirname "$ws")" "$(basename "$ws")"
echo "total $(( $(date +%s) - start )) s" >> "$OUT/run.log"
