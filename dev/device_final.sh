#!/usr/bin/env bash
# Final device call for the session: build there, run every GPU test, then write the
# reference runs: `gpuvs run` (the bundled reference shown without a GPU) and
# `gpuvs bench memory host launch` (the issue-5 one-GPU reference).
set -uo pipefail
export NCCL_NVLS_ENABLE=0
out=${OUT:-/tmp/out}; mkdir -p "$out/runs"
cmake -S . -B build/dev -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
  > "$out/build.log" 2>&1 && cmake --build build/dev --target gpuvs test_gpu -j 16 >> "$out/build.log" 2>&1 \
  || { tail -30 "$out/build.log"; exit 1; }
g=build/dev/src/gpuvs
(time ./build/dev/tests/test_gpu) > "$out/test_gpu.log" 2>&1
grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran|^real" "$out/test_gpu.log"
(time $g run --out "$out/runs") > "$out/run.txt" 2>&1; echo "run rc=$?"; cat "$out/run.txt"
(time $g bench memory host launch --time-cap 0.5 --out "$out/runs") > "$out/bench.txt" 2>&1
echo "bench rc=$?"; tail -60 "$out/bench.txt"
