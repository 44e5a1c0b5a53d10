#!/usr/bin/env bash
# One device call for the spine issue: build with the default preset (native arch),
# run every test (cpu label in parallel, gpu label serially so timings don't mix),
# then detect (human and JSON), nvidia-smi -q for comparison, gpuvs run and
# gpuvs bench memory. Everything the tool wrote comes back under $OUT.
set -uo pipefail
export NCCL_NVLS_ENABLE=0
out=${OUT:-/tmp/out}; mkdir -p "$out/runs"
cmake --preset default > "$out/build.log" 2>&1 && cmake --build --preset default -j 16 >> "$out/build.log" 2>&1 \
  || { tail -30 "$out/build.log"; exit 1; }
{ ctest --preset default -L cpu -j 8; ctest --preset default -L gpu --output-on-failure -V; } > "$out/ctest.log" 2>&1
grep -E "tests passed|tests failed|Skipped|Failed|\[probe\]" "$out/ctest.log" | head -40
g=build/default/src/gpuvs
$g detect | tee "$out/detect.txt"
$g detect --json > "$out/detect.json"; echo "detect --json rc=$?"
nvidia-smi -q > "$out/nvidia-smi-q.txt"
$g run --out "$out/runs" 2>&1 | tee "$out/run.txt"; echo "run rc=${PIPESTATUS[0]}"
$g bench memory --out "$out/runs" 2>&1 | tee -a "$out/run.txt"; echo "bench rc=${PIPESTATUS[0]}"
