#!/usr/bin/env bash
# Device run for the monitor issue (9): build, check our NVML declarations against the
# real nvml.h, then monitor (a) a BF16 GEMM loop, (b) a single-block spin kernel, and
# (c) measure the sampling overhead on the GEMM loop. Results in one archive in $OUT.
# Workloads use PyTorch from the device image (reference workloads, not gpuvs code).
set -u
FINAL=${OUT:-/tmp/out}
OUT=/tmp/gpuvs-monitor-out
rm -rf "$OUT"; mkdir -p "$OUT" "$FINAL"
trap 'tar czf "$FINAL/results.tgz" -C "$OUT" . ; cp "$OUT/steps.log" "$FINAL/" 2>/dev/null' EXIT
B=build/dev
G=$B/src/gpuvs
log() { echo "== $(date +%T) $*" | tee -a "$OUT/steps.log"; }

log build
{ cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
    && cmake --build $B --target gpuvs test_nvml_abi test_monitor_nvml -j 16; } > "$OUT/build.log" 2>&1 \
  || { tail -40 "$OUT/build.log"; exit 1; }
$B/tests/test_nvml_abi > "$OUT/abi.txt" 2>&1; echo "abi exit $?" | tee -a "$OUT/steps.log"

cat > /tmp/gemm_loop.py <<'PY'
import sys, time, torch
secs = float(sys.argv[1]); n = 8192
a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16); b = torch.randn_like(a)
torch.cuda.synchronize(); t0 = time.time(); k = 0
while time.time() - t0 < secs:
    for _ in range(20): c = a @ b
    torch.cuda.synchronize(); k += 20
dt = time.time() - t0
print(f"gemm_loop: {k} GEMMs in {dt:.2f} s = {2*n**3*k/dt/1e12:.1f} TFLOP/s")
PY
cat > /tmp/one_block.py <<'PY'
import sys, time, torch
secs = float(sys.argv[1]); t0 = time.time()
while time.time() - t0 < secs:
    torch.cuda._sleep(100_000_000)  # one thread, one block, spinning
    torch.cuda.synchronize()
print("one_block: done")
PY

log "monitor: BF16 GEMM loop (10 s)"
$G --out "$OUT" monitor --out "$OUT/gemm.json" --prometheus "$OUT/gemm.prom" -- python3 /tmp/gemm_loop.py 10 \
  > "$OUT/gemm.txt" 2>&1; echo "exit $?" | tee -a "$OUT/steps.log"; tail -n 15 "$OUT/gemm.txt"

log "monitor: single-block spin kernel (8 s)"
$G --out "$OUT" monitor --out "$OUT/oneblock.json" -- python3 /tmp/one_block.py 8 \
  > "$OUT/oneblock.txt" 2>&1; echo "exit $?" | tee -a "$OUT/steps.log"; tail -n 15 "$OUT/oneblock.txt"

log "overhead: GEMM loop alone, then under the monitor, twice each (10 s)"
for i in 1 2; do
  python3 /tmp/gemm_loop.py 10 2>&1 | tee -a "$OUT/overhead.txt"
  $G --out "$OUT" monitor --out "$OUT/overhead$i.json" -- python3 /tmp/gemm_loop.py 10 2>/dev/null | tee -a "$OUT/overhead.txt"
done
log done
