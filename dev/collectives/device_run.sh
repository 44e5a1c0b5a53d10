#!/usr/bin/env bash
# Device run for the collectives issue: build gpuvs and nccl-tests on the H200
# machine, then run the steps named in $STEPS (default: all) and leave logs and
# run files in $OUT. Usage on the device: STEPS="build sweep" dev/collectives/device_run.sh
set -u
export NCCL_NVLS_ENABLE=0
FINAL=${OUT:-/tmp/out}   # what comes back: steps.log and one archive (8 files at most)
OUT=/tmp/gpuvs-device-out
rm -rf "$OUT"; mkdir -p "$OUT" "$FINAL"
trap 'tar czf "$FINAL/results.tgz" -C "$OUT" . ; cp "$OUT/steps.log" "$FINAL/" 2>/dev/null' EXIT
STEPS=${STEPS:-build sweep mpi file commid kill study}
B=build/dev
G=$B/src/gpuvs
NT=build/ext/nccl-tests/build
START=$(date +%s)
remaining() { echo $((${DEADLINE_S:-570} - ($(date +%s) - START))); }
log() { echo "== $(date +%T) $*" | tee -a "$OUT/steps.log"; }
has() { [[ " $STEPS " == *" $1 "* ]]; }

if has build; then
  log build gpuvs
  { cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
      && cmake --build $B --target gpuvs test_gpu -j 16; } > "$OUT/build.log" 2>&1 || { tail -50 "$OUT/build.log"; exit 1; }
  grep -i "mpi" "$OUT/build.log" | head -3
  log build nccl-tests
  if [ ! -x $NT/all_reduce_perf ]; then
    make -C build/ext/nccl-tests -j 16 MPI=0 CUDA_HOME=/usr/local/cuda NCCL_HOME=/usr \
      NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" > "$OUT/nccl-tests-build.log" 2>&1 \
      || tail -30 "$OUT/nccl-tests-build.log"
  fi
  ls $NT | head -20
  nvidia-smi topo -m > "$OUT/topo.txt" 2>&1
fi

if has sweep; then
  log sweep: all ops, 8 B - 4 GiB, beside nccl-tests
  timeout 400 $G --out "$OUT/sweep" bench collectives.nccl --nccl-tests $NT > "$OUT/sweep.txt" 2> "$OUT/sweep.err"
  echo "exit $?" | tee -a "$OUT/steps.log"
  tail -5 "$OUT/sweep.err"
fi

if has allreduce; then
  log allreduce reference: 8 B - 4 GiB beside nccl-tests -n 100
  timeout 200 $G --out "$OUT/allreduce" bench collectives.nccl --ops all_reduce --nccl-tests $NT \
    > "$OUT/allreduce.txt" 2> "$OUT/allreduce.err"
  echo "exit $?" | tee -a "$OUT/steps.log"
  tail -n 5 "$OUT/allreduce.err"
fi

if has quicksweep; then
  log quicksweep: all_reduce beside nccl-tests
  timeout 200 $G --out "$OUT/quick" bench collectives.nccl --ops all_reduce --sizes 8:2G:4 --nccl-tests $NT > "$OUT/quick.txt" 2> "$OUT/quick.err"
  echo "exit $?" | tee -a "$OUT/steps.log"
  tail -5 "$OUT/quick.err"
fi

if has mpi; then
  log mpi: mpirun -np 2
  timeout 120 mpirun --allow-run-as-root -np 2 -x NCCL_NVLS_ENABLE $G --out "$OUT/mpi" bench collectives.nccl \
    --ops all_reduce,alltoall --sizes 8:1G:32 > "$OUT/mpi.txt" 2> "$OUT/mpi.err"
  echo "exit $?" | tee -a "$OUT/steps.log"
  tail -5 "$OUT/mpi.err"
fi

if has file; then
  log file rendezvous, no MPI
  rm -f /tmp/gpuvs.rdv
  timeout 120 $G --out "$OUT/file" bench collectives.nccl --ops all_reduce,sendrecv --sizes 8:1G:32 \
    --rank 0 --ranks 2 --rendezvous file:/tmp/gpuvs.rdv > "$OUT/file0.txt" 2> "$OUT/file0.err" &
  P0=$!
  CUDA_VISIBLE_DEVICES=1 timeout 120 $G --out "$OUT/file1" bench collectives.nccl --ops all_reduce,sendrecv \
    --sizes 8:1G:32 --rank 1 --ranks 2 --rendezvous file:/tmp/gpuvs.rdv > "$OUT/file1.txt" 2> "$OUT/file1.err"
  echo "rank1 exit $?" | tee -a "$OUT/steps.log"
  wait $P0; echo "rank0 exit $?" | tee -a "$OUT/steps.log"
  tail -n 3 "$OUT/file0.err" "$OUT/file1.err"
fi

if has commid; then
  log NCCL_COMM_ID rendezvous
  export NCCL_COMM_ID=127.0.0.1:29517
  timeout 120 $G --out "$OUT/commid" bench collectives.nccl --ops broadcast --sizes 8:1G:64 --rank 0 --ranks 2 \
    > "$OUT/commid0.txt" 2> "$OUT/commid0.err" &
  P0=$!
  timeout 120 $G --out "$OUT/commid1" bench collectives.nccl --ops broadcast --sizes 8:1G:64 --rank 1 --ranks 2 \
    > "$OUT/commid1.txt" 2> "$OUT/commid1.err"
  echo "rank1 exit $?" | tee -a "$OUT/steps.log"
  wait $P0; echo "rank0 exit $?" | tee -a "$OUT/steps.log"
  unset NCCL_COMM_ID
  tail -n 3 "$OUT/commid0.err" "$OUT/commid1.err"
fi

# A rank killed (SIGKILL) or stopped (SIGSTOP) mid-sweep: rank 0 must end with an
# error naming rank 1, well within --timeout (stop) or at once (kill).
fault() {  # fault NAME SIGNAL
  local name=$1 sig=$2
  log "$name: rank 1 gets SIG$sig mid-sweep, --timeout 15"
  rm -f /tmp/gpuvs-$name.rdv
  $G --out "$OUT/$name" bench collectives.nccl --timeout 15 --sizes 8:4G:2 --rank 0 --ranks 2 \
    --rendezvous file:/tmp/gpuvs-$name.rdv > "$OUT/${name}0.txt" 2> "$OUT/${name}0.err" &
  local p0=$!
  $G --out "$OUT/${name}1" bench collectives.nccl --timeout 15 --sizes 8:4G:2 --rank 1 --ranks 2 \
    --rendezvous file:/tmp/gpuvs-$name.rdv > "$OUT/${name}1.txt" 2> "$OUT/${name}1.err" &
  local p1=$!
  ( sleep 120; kill -9 $p0 $p1 2>/dev/null ) &
  local guard=$!
  sleep 12
  kill -$sig $p1
  local t1=$(date +%s.%N)
  wait $p0; local rc=$?
  local t2=$(date +%s.%N)
  echo "$name: rank0 exit $rc, $(python3 -c "print(round($t2 - $t1, 2))") s after SIG$sig" | tee -a "$OUT/steps.log"
  kill -9 $p1 2>/dev/null; kill $guard 2>/dev/null
  tail -n 4 "$OUT/${name}0.err"; grep -i "error" "$OUT/${name}0.txt" | head -3
}
if has kill; then fault kill KILL; fi
if has hang; then fault hang STOP; fi

if has gtest; then
  log gtest: collectives GPU tests
  timeout 200 $B/tests/test_gpu --gtest_filter='Collectives*' > "$OUT/gtest.txt" 2>&1
  echo "exit $?" | tee -a "$OUT/steps.log"
  tail -n 15 "$OUT/gtest.txt"
fi

if has latency; then
  log latency experiment: small sizes, default vs nvlinkCentricSched, nccl-tests
  for v in 0 1; do
    GPUVS_DEV_NVLINK_CENTRIC=$v timeout 100 $G --out "$OUT/lat$v" bench collectives.nccl --ops all_reduce --sizes 8:64K:4 \
      > "$OUT/lat$v.txt" 2> "$OUT/lat$v.err"
    echo "centric=$v exit $?" | tee -a "$OUT/steps.log"
    grep -E "^ +[0-9]+ [KMG]?i?B" "$OUT/lat$v.txt" | head -8
  done
  $NT/all_reduce_perf -b 8 -e 64K -f 4 -g 2 > "$OUT/lat-nt.txt" 2>&1
  grep -E "^ +[0-9]+ " "$OUT/lat-nt.txt" | head -8
fi

# all_reduce 512 KiB - 16 MiB, where gpuvs measured 2-7 % faster than nccl-tests, under
# both buffer allocations, each beside nccl-tests. (nvlinkCentricSched, nccl-tests' other
# difference, was tried here too: no effect beyond noise; docs/collectives.md.)
if has gap; then
  for buf in cudaMalloc ncclMemAlloc; do
    log "gap: buffers $buf, beside nccl-tests"
    timeout 120 $G --out "$OUT/gap-$buf" bench collectives.nccl --ops all_reduce \
      --sizes 512K:16M:2 --graph off --buffers $buf --nccl-tests $NT > "$OUT/gap-$buf.txt" 2> "$OUT/gap-$buf.err"
    echo "exit $?" | tee -a "$OUT/steps.log"
    grep -E "MiB|KiB" "$OUT/gap-$buf.txt" | head -12 | tee -a "$OUT/steps.log"
  done
fi

if has reference; then
  log reference: every op, 8 B - 4 GiB, beside nccl-tests
  timeout 330 $G --out "$OUT/reference" bench collectives.nccl --time-cap 0.5 --nccl-tests $NT \
    > "$OUT/reference.txt" 2> "$OUT/reference.err"
  echo "exit $?" | tee -a "$OUT/steps.log"
  tail -n 5 "$OUT/reference.err"
fi

if has study && [ "$(remaining)" -gt 40 ]; then
  log "study: every reducing/gathering op, $(remaining) s left"
  timeout $(( $(remaining) - 10 )) $G --out "$OUT/study" bench collectives.algorithms \
    > "$OUT/study.txt" 2> "$OUT/study.err"
  echo "exit $?" | tee -a "$OUT/steps.log"
  tail -5 "$OUT/study.err"
fi
log done
