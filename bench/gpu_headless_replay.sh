#!/usr/bin/env bash
# One headless replay run of vector_add on the GPU with three candidates — the same kernel (equal), block
# 32 with one warp (slower) and block 1024 (faster) — ending with the final re-test and the report.
# Copies the main records and a tarball of the whole workspace under $OUT.
set -u
OUT=${OUT:-bench/results/raw}; mkdir -p "$OUT"; PY=${PY:-python3}
ws=$(mktemp -d)/vector_add-replay
timeout 540 $PY -m kernel_tui run fixtures/vector_add --headless --proposer replay \
  --candidates bench/candidates/replay_vector_add --device cuda --workspace "$ws" > "$OUT/run.log" 2>&1
echo "exit $?" >> "$OUT/run.log"
$PY -m kernel_tui history "$ws" --all >> "$OUT/run.log" 2>&1
for f in report.md final-comparison.json trajectory.jsonl rounds_overview.png run_summary.json; do cp "$ws/$f" "$OUT/" 2>/dev/null; done
tar czf "$OUT/workspace.tar.gz" -C "$(dirname "$ws")" "$(basename "$ws")"
