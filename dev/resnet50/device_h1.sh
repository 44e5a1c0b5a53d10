#!/usr/bin/env bash
# One device call for the ResNet-50 model (issue 7, model part) on one H200: build
# the dev check (dev/resnet50/check.cpp) and run it: correctness at small batches
# (finite differences, accumulation, determinism, eval == inference, one batch
# memorised) for bf16, fp16, tf32, fp32, then throughput at batch 256 eager and in a
# CUDA graph, and the bf16 per-layer breakdown. Self-checking: PASS/FAIL lines, exit 1
# on any failure. Output in $OUT/check.txt, build log in $OUT/build.log.
#   usage: dev/resnet50/device_h1.sh [check args...]   (e.g. --quick bf16)
set -uo pipefail
out=${OUT:-/tmp/out}
mkdir -p "$out"
{ cmake -S . -B build/h1dev -G Ninja -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_BUILD_TYPE=Release \
    -DGPUVS_TESTS=OFF &&
  cmake --build build/h1dev --target gpuvs_resnet50_check -j 16; } > "$out/build.log" 2>&1 ||
  { tail -60 "$out/build.log"; exit 1; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,memory.total --format=csv > "$out/gpu.txt" 2>&1
timeout "${CHECK_TIMEOUT_S:-480}" build/h1dev/src/gpuvs_resnet50_check "$@" 2>&1 | tee "$out/check.txt"
rc=${PIPESTATUS[0]}
echo "check rc=$rc"
exit "$rc"
