#!/usr/bin/env bash
# One GPU run: the 25-step search on vector_add (bench/gpu_search_vector_add.sh) with its re-test and
# torch.add, what its evaluations cost, the adversarial catalogue on the GPU (GPU-only cases included),
# what matmul evaluations cost, and the spread of one real change over 10 fresh processes.
# Everything lands in one tarball under $OUT (the device returns few files).
set -u
OUT=${OUT:-bench/results/raw}; mkdir -p "$OUT"; PY=${PY:-python3}
S=$(mktemp -d)/checks; mkdir -p "$S"
t0=$(date +%s); lap() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$S/driver.log"; }
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
  $PY -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"; } > "$S/environment.txt" 2>&1
lap "sanity: one gate decision through the fork server"
sanity() { timeout 120 $PY -m kernel_tui eval --task fixtures/vector_add --candidate bench/candidates/vector_add_block1024.py \
    --device cuda --json > "$S/sanity_eval$1.json" 2> "$S/sanity_eval$1.err"; }
if ! sanity ""; then
  lap "fork-served eval failed: $(head -c 400 "$S/sanity_eval.json"; tail -3 "$S/sanity_eval.err")"
  export KERNEL_TUI_FORK_SERVER=0
  if ! sanity "_fresh"; then  # the engine itself is broken on this machine: stop here, keep the evidence
    lap "eval failed with fresh interpreters too: $(head -c 400 "$S/sanity_eval_fresh.json")"
    tar czf "$OUT/checks.tar.gz" -C "$(dirname "$S")" checks; cp "$S/driver.log" "$OUT/"; exit 1
  fi
fi
lap "sanity: $(head -c 300 "$S/sanity_eval.json")"
lap "search"
ws=$(mktemp -d)/vector_add-search
WS="$ws" OUT="$S/search" LIMIT=${LIMIT:-230} bash bench/gpu_search_vector_add.sh
lap "evaluator cost of the search's evaluations ($ws)"
$PY bench/evaluator_cost.py --workspace "$ws" --name vector_add-search --out "$S" >> "$S/driver.log" 2>&1
lap "adversarial catalogue"
KT_TEST_DEVICE=cuda timeout 150 $PY -m pytest -q -p no:cacheprovider -n 4 tests/core/evaluator/test_adversarial.py > "$S/adversarial_gpu.txt" 2>&1
lap "matmul evaluator cost"
timeout 80 $PY bench/evaluator_cost.py --task matmul --count 4 --device cuda --out "$S" --budget 55 >> "$S/driver.log" 2>&1
lap "reproducibility"
timeout 45 $PY bench/gate_calibration.py --device cuda --parts repro --out "$S/repro" --budget 38 >> "$S/driver.log" 2>&1
lap "done"
tar czf "$OUT/checks.tar.gz" -C "$(dirname "$S")" checks
cp "$S/driver.log" "$OUT/"
