#!/usr/bin/env bash
# Device check for issue 9, deliverable 3: utilization in every benchmark run. Builds
# gpuvs, runs test_monitor, then `gpuvs bench compute.gemm memory.hbm launch.overhead
# --quick` on GPU 0 with the monitor (100 ms) and `launch.overhead` without it, and
# checks the run files (dev/monitor/check_session.py). Self-checking: exits 1 naming
# the failed check; everything lands in $OUT.
set -u
FINAL=${OUT:-/tmp/out}
mkdir -p "$FINAL"
B=build/dev-session
G=$B/src/gpuvs
log() { echo "== $(date +%T) $*" | tee -a "$FINAL/steps.log"; }

log build
{ cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
    && cmake --build $B --target gpuvs test_monitor test_monitor_nvml -j 16; } > "$FINAL/build.log" 2>&1 \
  || { tail -40 "$FINAL/build.log"; exit 1; }
$B/tests/test_monitor > "$FINAL/test_monitor.txt" 2>&1 \
  || { tail -30 "$FINAL/test_monitor.txt"; echo "FAIL: test_monitor"; exit 1; }

log "bench compute.gemm memory.hbm launch.overhead --quick on GPU 0, monitored every 100 ms"
rm -rf "$FINAL/on" "$FINAL/off"
$G --out "$FINAL/on" bench compute.gemm memory.hbm launch.overhead --quick --gpu 0 \
  > "$FINAL/on.txt" 2> "$FINAL/on.err"
echo "exit $?" | tee -a "$FINAL/steps.log"; tail -n 25 "$FINAL/on.txt"; cat "$FINAL/on.err"

log "bench launch.overhead --quick on GPU 0, --monitor-interval 0"
$G --out "$FINAL/off" bench launch.overhead --quick --gpu 0 --monitor-interval 0 \
  > "$FINAL/off.txt" 2> "$FINAL/off.err"
echo "exit $?" | tee -a "$FINAL/steps.log"

log check
python3 dev/monitor/check_session.py "$FINAL/on" "$FINAL/on.txt" "$FINAL/off" 2>&1 | tee "$FINAL/check.txt"
rc=${PIPESTATUS[0]}
log "done (check exit $rc)"
exit "$rc"
