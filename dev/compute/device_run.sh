#!/usr/bin/env bash
# One device call for the compute peaks (issue 4): the compute GPU tests, then
# `gpuvs run` (timed: the quick pass must stay under 20 s) and `gpuvs bench compute`,
# with nvidia-smi before and after. Runs the binaries carried in $BIN (built on the
# workstation); where they do not run on the device image, builds $SRC there.
# SASS=regex dumps the machine code of the kernels whose names match.
# Everything that comes back is under $OUT (at most 8 files).
set -uo pipefail
export NCCL_NVLS_ENABLE=0
out=${OUT:-/tmp/out}
mkdir -p "$out/runs"
bin=${BIN:-build/helper-compute-bin}
src=${SRC:-build/helper-compute-src}
smi() {
  nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu \
    --format=csv,noheader
}
smi
if ldd "$bin/gpuvs" | grep -q "not found" || ! "$bin/gpuvs" --version > /dev/null 2>&1; then
  echo "carried binaries do not run here; building $src"
  cmake -S "$src" -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
    > "$out/build.log" 2>&1 && cmake --build /tmp/b --target gpuvs test_gpu -j16 >> "$out/build.log" 2>&1 \
    || { tail -30 "$out/build.log"; exit 1; }
  bin=/tmp/bin
  mkdir -p "$bin" && cp /tmp/b/src/gpuvs /tmp/b/tests/test_gpu "$bin/"
fi
SECONDS=0
if [ "${TESTS:-}" != "none" ]; then
  CUBLASLT_LOG_LEVEL=1 "$bin/test_gpu" --gtest_filter="${TESTS:-ArchRates*:GemmSupport*:Fma*:Roofline*:Gemm*:Compute*}" \
    > "$out/test_gpu.log" 2>&1
  echo "test_gpu rc=$? (${SECONDS} s)"
  grep -E "^\[  (FAILED|PASSED|SKIPPED) |^\[       OK|Failure|Expected|Which is|actual|Value of" \
    "$out/test_gpu.log" | head -70
fi
if [ "${RUN:-1}" = 1 ]; then
  t0=$SECONDS
  "$bin/gpuvs" run --out /tmp/runs > "$out/run.txt" 2>&1
  echo "gpuvs run rc=$? took $((SECONDS - t0)) s"
  tail -25 "$out/run.txt"
fi
if [ "${BENCH:-1}" = 1 ]; then
  t0=$SECONDS
  # Straight into $OUT: the run file is saved after every benchmark, so a call cut
  # short still brings back what was measured.
  "$bin/gpuvs" bench ${BENCH_NAMES:-compute} --out "$out/runs" > "$out/bench.txt" 2>&1
  echo "gpuvs bench rc=$? took $((SECONDS - t0)) s"
  tail -${BENCH_TAIL:-70} "$out/bench.txt"
fi
smi
if [ -n "${SASS:-}" ] && command -v cuobjdump > /dev/null; then
  cuobjdump -sass "$bin/gpuvs" | awk -v pat="$SASS" '/Function :/ { keep = ($0 ~ pat) } keep' \
    > "$out/sass.txt"
  echo "sass: $(wc -l < "$out/sass.txt") lines"
fi
cp /tmp/runs/*.json "$out/runs/" 2>/dev/null
ls -la "$out" "$out/runs"
