#!/usr/bin/env bash
# One short call on two GPUs: the GPU-only attack cases (the stream-order check) then more A/A gates on
# matmul on GPU 1, while GPU 0 adds A/A gates on vector_add. One tarball under $OUT.
set -u
OUT=${OUT:-bench/results/raw}; mkdir -p "$OUT"; PY=${PY:-python3}
S=$(mktemp -d)/more; mkdir -p "$S/va" "$S/mm"
t0=$(date +%s); lap() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$S/driver.log"; }
lap "GPU 0: A/A vector_add"
CUDA_VISIBLE_DEVICES=0 timeout $(( ${VA_BUDGET:-240} + 30 )) $PY bench/gate_calibration.py --device cuda --out "$S/va" \
  --budget ${VA_BUDGET:-240} --parts aa --aa-fixtures vector_add --per-process 30 --shares aa:vector_add=1.0 > "$S/va.log" 2>&1 &
va=$!
lap "GPU 1: attack cases"
CUDA_VISIBLE_DEVICES=1 KT_TEST_DEVICE=cuda timeout 70 $PY -m pytest -q -p no:cacheprovider -n 4 tests/core/evaluator/test_adversarial.py \
  -k "gpu_ or side_stream or crash" > "$S/adversarial_gpu_only.txt" 2>&1
lap "GPU 1: A/A matmul"
left=$(( ${VA_BUDGET:-240} - ($(date +%s) - t0) ))
CUDA_VISIBLE_DEVICES=1 timeout $(( left + 30 )) $PY bench/gate_calibration.py --device cuda --out "$S/mm" \
  --budget $left --parts aa --aa-fixtures matmul --per-process 30 --shares aa:matmul=1.0 > "$S/mm.log" 2>&1
wait $va
lap "done"
tar czf "$OUT/more.tar.gz" -C "$(dirname "$S")" more
cp "$S/driver.log" "$OUT/"; tail -5 "$S/adversarial_gpu_only.txt" >> "$OUT/driver.log"; tail -3 "$S/va.log" "$S/mm.log" >> "$OUT/driver.log"
