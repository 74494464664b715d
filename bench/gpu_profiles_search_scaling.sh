#!/usr/bin/env bash
# The GPU measurements of profiles, the profile-aware search and parallel evaluation, one part per GPU run
# (each under ten minutes). Writes under $OUT, few files (eight at most per run):
# a workspace's artifacts travel as one tarball.
#   PART=profiles  bench/profile_versions.py on the fixtures: profile wall time, DRAM bytes vs the cost model,
#                  ncu kernel time vs the evaluator's latency
#   PART=search-matmul / PART=search-vector_add
#                  a live 25-step built-in search (stopped at LIMIT s, then finalized with the rounds done), its
#                  profiles, and the best timed against torch (matmul: torch.matmul, vector_add: torch.add)
#   PART=search-task TASK=DIR TORCH_SIDES="FILE ..."
#                  the same on any task, its best timed against each torch side given. For KernelBench's
#                  square GEMM (level 1 problem 1) with a Triton starting point, import it first (KernelBench
#                  is not in this repository; .kernelbench/ is git-ignored, name it in the call's carry):
#                    kernel-tui import kernelbench KernelBench/level1/1_Square_matrix_multiplication_.py \
#                      --out .kernelbench/kb_gemm --baseline bench/candidates/kb_square_gemm_triton.py
#                  TASK=.kernelbench/kb_gemm TORCH_SIDES=bench/candidates/kb_square_gemm_torch.py
#   PART=search-resume WS_TAR=FILE TORCH_SIDES="FILE ..." [MAX_STEPS=25]
#                  continues a workspace that an earlier run tarred (put the tarball under a carried,
#                  git-ignored path such as .kernelbench/) up to MAX_STEPS rounds in total, within LIMIT s,
#                  then the same finish: so a long search spans several GPU calls
#   PART=scaling   bench/gpu_scaling.py over every visible GPU (a two-GPU machine)
set -u
OUT=${OUT:-bench/results/raw}; mkdir -p "$OUT"; PY=${PY:-python3}; LIMIT=${LIMIT:-420}; PART=${PART:-profiles}
start=$(date +%s)
# run the search until LIMIT, finalize with the rounds done if it was stopped, time the best against each
# torch side, and tar the workspace's record (report, trajectory, summaries, profiles, evaluations)
search_then_finish() {
  local target=$1; shift
  timeout -s TERM "$LIMIT" $PY -m kernel_tui run "$target" --headless --device cuda "$@" >> "$OUT/$task-run.log" 2>&1
  echo "search exit $? after $(( $(date +%s) - start )) s" >> "$OUT/$task-run.log"
  if [ ! -f "$ws/final-comparison.json" ] || [ "$ws/trajectory.jsonl" -nt "$ws/final-comparison.json" ]; then
    local used; used=$(wc -l < "$ws/trajectory.jsonl")
    $PY -m kernel_tui run "$ws" --headless --max-steps "$used" --device cuda >> "$OUT/$task-run.log" 2>&1
  fi
  for torch_side in $torch_sides; do
    echo "== $torch_side" >> "$OUT/$task-best_vs_torch.txt"
    $PY -m kernel_tui compare --task "$task_dir" --incumbent "$torch_side" --candidate "$ws/best.py" --runs 5 \
      --device cuda --no-policy >> "$OUT/$task-best_vs_torch.txt" 2>&1
  done
  $PY -m kernel_tui history "$ws" --all >> "$OUT/$task-run.log" 2>&1
  (cd "$(dirname "$ws")" && tar czf "$OUT/$task-ws.tar.gz" --exclude='*.ptx' --exclude='*.cubin' \
    --exclude='triton-cache' "$(basename "$ws")")
}
case "$PART" in
  profiles)
    # a profile that hangs gives up after 90 s; one that fails in the sandbox is retaken without it
    $PY bench/profile_versions.py --out "$OUT/profiles.jsonl" --profile-timeout 90 --unconfined-retry \
      > "$OUT/profiles.log" 2>&1 ;;
  search-matmul|search-vector_add|search-task)
    task=${PART#search-}; task_dir=fixtures/$task
    torch_sides=${TORCH_SIDES:-bench/candidates/matmul_torch_matmul.py}
    [ "$task" = vector_add ] && torch_sides=bench/candidates/vector_add_torch_add.py
    if [ "$task" = task ]; then task_dir=${TASK:?PART=search-task needs TASK}; task=$(basename "$task_dir"); fi
    ws=$(mktemp -d)/$task-search
    search_then_finish "$task_dir" --proposer search --max-steps 25 --workspace "$ws" ;;
  search-resume)
    torch_sides=${TORCH_SIDES:-bench/candidates/matmul_torch_matmul.py}
    tmp=$(mktemp -d); tar xzf "${WS_TAR:?PART=search-resume needs WS_TAR}" -C "$tmp"
    ws=$(find "$tmp" -mindepth 1 -maxdepth 1 -type d | head -1); task=$(basename "$ws"); task=${task%-search}
    # a workspace holds its task (task.json, reference), so it is the task the best is compared on
    task_dir=$ws
    search_then_finish "$ws" --max-steps "${MAX_STEPS:-25}" ;;
  scaling)
    $PY bench/gpu_scaling.py --gpus all --out "$OUT/scaling" --budget "$((LIMIT + 100))" > "$OUT/scaling.log" 2>&1 ;;
  *) echo "unknown PART $PART" >&2; exit 2 ;;
esac
echo "$PART: $(( $(date +%s) - start )) s" | tee -a "$OUT/parts.log"
