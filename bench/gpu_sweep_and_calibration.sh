#!/usr/bin/env bash
# One call on two GPUs of one host: the knob sweeps, torch references and bandwidth (bench/sweep) on
# GPU 0 while GPU 1 runs the adversarial catalogue, then the gate calibration (A/A on vector_add and
# matmul, power at known effects). Each GPU runs one workload at a time; everything lands in one
# tarball under $OUT.
set -u
OUT=${OUT:-bench/results/raw}; mkdir -p "$OUT"; PY=${PY:-python3}
S=$(mktemp -d)/final; mkdir -p "$S/sweep" "$S/gate"
t0=$(date +%s); lap() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$S/driver.log"; }
{ date -u; nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.mem --format=csv
  $PY -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"; } > "$S/environment.txt" 2>&1
lap "GPU 0: sweep"
CUDA_VISIBLE_DEVICES=0 timeout ${SWEEP_LIMIT:-560} $PY -m bench.sweep --device cuda --out "$S/sweep" \
  --budget ${SWEEP_BUDGET:-520} --pool 12 > "$S/sweep.log" 2>&1 &
sweep=$!
lap "GPU 1: adversarial catalogue"
CUDA_VISIBLE_DEVICES=1 KT_TEST_DEVICE=cuda timeout 120 $PY -m pytest -q -p no:cacheprovider -n 4 \
  tests/core/evaluator/test_adversarial.py > "$S/adversarial_gpu.txt" 2>&1
lap "GPU 1: gate calibration"
CUDA_VISIBLE_DEVICES=1 timeout $(( ${GATE_BUDGET:-400} + 40 )) $PY bench/gate_calibration.py --device cuda \
  --out "$S/gate" --budget ${GATE_BUDGET:-400} --parts aa,power --per-process 30 \
  --shares aa:vector_add=0.3,aa:matmul=0.42 > "$S/gate.log" 2>&1
lap "GPU 1 done; waiting for the sweep"
wait $sweep
lap "done"
tar czf "$OUT/final.tar.gz" -C "$(dirname "$S")" final
cp "$S/driver.log" "$OUT/"; tail -4 "$S/adversarial_gpu.txt" >> "$OUT/driver.log"; tail -12 "$S/gate.log" >> "$OUT/driver.log"
tail -15 "$S/sweep.log" >> "$OUT/driver.log"
