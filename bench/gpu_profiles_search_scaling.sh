#!/usr/bin/env bash
# The GPU measurements of profiles, the profile-aware search and parallel evaluation, one part per device call
# (each fits the 10-minute limit). Writes under $OUT, few files (a device call brings back at most eight):
# a workspace's artifacts travel as one tarball.
#   PART=profiles  bench/profile_versions.py on the fixtures: profile wall time, DRAM bytes vs the cost model,
#                  ncu kernel time vs the evaluator's latency
#   PART=search-matmul / PART=search-vector_add
#                  a live 25-step built-in search (stopped at LIMIT s, then finalized with the rounds done), its
#                  profiles, and the best timed against torch (matmul: torch.matmul, vector_add: torch.add)
#   PART=scaling   bench/gpu_scaling.py over every visible GPU (a two-GPU machine)
set -u
OUT=${OUT:-bench/results/raw}; mkdir -p "$OUT"; PY=${PY:-python3}; LIMIT=${LIMIT:-420}; PART=${PART:-profiles}
start=$(date +%s)
case "$PART" in
  profiles)
    # a profile that hangs gives up after 90 s; one that fails in the sandbox is retaken without it
    $PY bench/profile_versions.py --out "$OUT/profiles.jsonl" --profile-timeout 90 --unconfined-retry \
      > "$OUT/profiles.log" 2>&1 ;;
  search-matmul|search-vector_add)
    task=${PART#search-}; ws=$(mktemp -d)/$task-search
    torch_side=bench/candidates/matmul_torch_matmul.py
    [ "$task" = vector_add ] && torch_side=bench/candidates/vector_add_torch_add.py
    timeout -s TERM "$LIMIT" $PY -m kernel_tui run "fixtures/$task" --headless --proposer search --max-steps 25 \
      --device cuda --workspace "$ws" > "$OUT/$task-run.log" 2>&1
    echo "search exit $? after $(( $(date +%s) - start )) s" >> "$OUT/$task-run.log"
    if [ ! -f "$ws/final-comparison.json" ]; then
      used=$(wc -l < "$ws/trajectory.jsonl")
      $PY -m kernel_tui run "$ws" --headless --max-steps "$used" --device cuda >> "$OUT/$task-run.log" 2>&1
    fi
    $PY -m kernel_tui compare --task "fixtures/$task" --incumbent "$torch_side" --candidate "$ws/best.py" --runs 5 \
      --device cuda --no-policy > "$OUT/$task-best_vs_torch.txt" 2>&1
    $PY -m kernel_tui history "$ws" --all >> "$OUT/$task-run.log" 2>&1
    # the workspace's record (report, trajectory, summaries, profiles, evaluations) as one file
    (cd "$(dirname "$ws")" && tar czf "$OUT/$task-ws.tar.gz" --exclude='*.ptx' --exclude='*.cubin' \
      --exclude='triton-cache' "$(basename "$ws")")
    ;;
  scaling)
    $PY bench/gpu_scaling.py --gpus all --out "$OUT/scaling" --budget "$((LIMIT + 100))" > "$OUT/scaling.log" 2>&1 ;;
  *) echo "unknown PART $PART" >&2; exit 2 ;;
esac
echo "$PART: $(( $(date +%s) - start )) s" | tee -a "$OUT/parts.log"
