#!/usr/bin/env bash
# Warp specialization on an H200, then KernelBench coverage of Inductor starts with the rest of the call.
#   1. the two hand-made probes (bench/candidates/structural/searched_matmul_ws_*: the live search's matmul best of
#      2026-12-03 with `warp_specialize=True` on its K loop or on its persistent tile loop), each one gate decision
#      against that best (gpu_structural.sh);
#   2. a probe the gate accepted, timed against torch.matmul (`kernel-tui compare --runs 5`), beside the best itself
#      in the same call, so the two ratios share a machine;
#   3. bench/gpu_inductor_coverage.sh until LIMIT (seconds for the whole call, default 570), JOBS at once (default 5).
# Writes $OUT/gpu.txt, structural.{log,tgz}, ws_vs_torch.txt, coverage.{log,tsv}, captures.tgz.
set -u
OUT=${OUT:-bench/results/raw}; mkdir -p "$OUT"; PY=${PY:-python3}; LIMIT=${LIMIT:-570}
start=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$OUT/gpu.txt" 2>&1
$PY -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" >> "$OUT/gpu.txt" 2>&1
EVAL_LIMIT=${EVAL_LIMIT:-150} OUT=$OUT PY=$PY bash bench/gpu_structural.sh searched_matmul_ws_k_loop searched_matmul_ws_tile_loop
best=bench/results/2026-12-03-h200-search-matmul/raw/best.py
torch_side=bench/candidates/matmul_torch_matmul.py
for name in searched_matmul_ws_k_loop searched_matmul_ws_tile_loop; do
  grep -qE "^$name ok .*accepted" "$OUT/structural.log" || continue
  for cand in "$best" "bench/candidates/structural/$name.py"; do
    echo "== $cand against $torch_side" >> "$OUT/ws_vs_torch.txt"
    timeout 150 $PY -m kernel_tui compare --task fixtures/matmul --incumbent "$torch_side" --candidate "$cand" \
      --runs 5 --device cuda --no-policy >> "$OUT/ws_vs_torch.txt" 2>&1
  done
  break
done
echo "warp specialization: $(( $(date +%s) - start )) s" >> "$OUT/structural.log"
left=$(( LIMIT - ($(date +%s) - start) ))
[ "$left" -gt 120 ] && LIMIT=$left JOBS=${JOBS:-5} OUT=$OUT PY=$PY bash bench/gpu_inductor_coverage.sh
echo done
