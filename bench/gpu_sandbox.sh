#!/usr/bin/env bash
# One GPU run for the worker sandbox: what it reports on this machine, the adversarial catalogue
# with it on (the sandbox cases switch the static policy off), the policy's module-graph walk against
# this machine's torch and triton, and the sandbox's cost per gate decision with A/A gates on vector_add
# and matmul. Everything lands in one tarball under $OUT.
set -u
OUT=${OUT:-bench/results/raw}; mkdir -p "$OUT"; PY=${PY:-python3}
S=$(mktemp -d)/sandbox; mkdir -p "$S"
t0=$(date +%s); lap() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$S/driver.log"; }
{ date -u; uname -r; id; nvidia-smi --query-gpu=name,driver_version --format=csv
  $PY -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
  $PY -c "from kernel_tui.core.evaluator.sandbox import landlock_abi; print('landlock ABI', landlock_abi())"; } > "$S/environment.txt" 2>&1
lap "sanity: one sandboxed check"
timeout 120 $PY -m kernel_tui eval --task fixtures/vector_add --candidate fixtures/vector_add/baseline.py \
  --device cuda --json > "$S/sanity.json" 2> "$S/sanity.err"
lap "sanity: $(head -c 600 "$S/sanity.json") $(tail -2 "$S/sanity.err")"
lap "catalogue and sandbox cases on the GPU"
KT_TEST_DEVICE=cuda timeout ${CAT_LIMIT:-200} $PY -m pytest -q -p no:cacheprovider -n 6 tests/core/evaluator/test_adversarial.py > "$S/adversarial_gpu.txt" 2>&1
lap "$(tail -1 "$S/adversarial_gpu.txt")"
lap "policy walk against this torch and triton"
timeout 90 $PY -m pytest -q -p no:cacheprovider tests/core/test_policy_walk.py tests/core/test_policy.py > "$S/policy_walk.txt" 2>&1
lap "$(tail -1 "$S/policy_walk.txt")"
lap "cost and A/A: vector_add"
timeout ${VA_LIMIT:-200} $PY bench/sandbox_cost.py --task vector_add --pairs 12 --budget ${VA_BUDGET:-170} --out "$S" > /dev/null 2>> "$S/driver.log"
lap "cost and A/A: matmul"
timeout ${MM_LIMIT:-120} $PY bench/sandbox_cost.py --task matmul --pairs 6 --budget ${MM_BUDGET:-90} --out "$S" > /dev/null 2>> "$S/driver.log"
lap "done"
tar czf "$OUT/sandbox.tar.gz" -C "$(dirname "$S")" sandbox
cp "$S/driver.log" "$OUT/"
