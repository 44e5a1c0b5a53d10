#!/usr/bin/env bash
# Two-GPU device call: peer links with the batched both-ways timing, the peer GPU
# tests, and the HBM set again on GPU 0 for run-to-run spread.
set -uo pipefail
export NCCL_NVLS_ENABLE=0
out=${OUT:-/tmp/out}; mkdir -p "$out/runs"
cmake -S . -B build/dev -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
  > "$out/build.log" 2>&1 && cmake --build build/dev --target gpuvs test_gpu -j 32 >> "$out/build.log" 2>&1 \
  || { tail -30 "$out/build.log"; exit 1; }
g=build/dev/src/gpuvs
./build/dev/tests/test_gpu --gtest_filter='Peer*' 2>&1 | grep -E "^\[  (PASSED|FAILED|SKIPPED|     OK) "
$g bench peer --out "$out/runs" 2>&1 | tee "$out/peer.txt"
nvidia-smi topo -m > "$out/topo.txt" 2>&1
for k in 1 2; do CUDA_VISIBLE_DEVICES=0 $g bench memory.hbm --quiet 2>&1 | grep -E "HBM (copy|triad|read)"; done
