#!/usr/bin/env bash
# One device call for issue 5 on two GPUs (nvidia-h200-x2), everything in order of
# importance within a deadline: build; `gpuvs bench peer` over both GPUs (the peer
# reference run); `gpuvs bench memory host launch` with only GPU 0 visible (the
# one-GPU reference run); the GPU tests; the quick pass timed with one GPU visible
# (what `gpuvs run` adds, peer reported as not applicable); the HBM ladder
# (dev/memory/ladder.cu); the host link of GPU 1 while GPU 0 idles. At most 8 files
# come back under $OUT.
set -uo pipefail
export NCCL_NVLS_ENABLE=0
out=${OUT:-/tmp/out}
mkdir -p "$out/runs1" "$out/runs2" /tmp/quick
ms() { date +%s%N | cut -c1-13; }
t_start=$(ms)
deadline=${DEADLINE_S:-285}
cap() {  # seconds for a step: at most $1, and what is left before the deadline
  local left=$(( deadline - ($(ms) - t_start) / 1000 ))
  (( left < $1 )) && echo $(( left > 1 ? left : 1 )) || echo "$1"
}
nvcc -O3 -std=c++17 -gencode=arch=compute_90,code=sm_90 -o /tmp/ladder dev/memory/ladder.cu > /dev/null 2>&1 &
{ cmake -S . -B build/dev -G Ninja -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_BUILD_TYPE=Release &&
  cmake --build build/dev --target gpuvs test_gpu -j 32; } >> "$out/build.log" 2>&1 ||
  { tail -60 "$out/build.log"; exit 1; }
echo "build wall_ms=$(( $(ms) - t_start ))" | tee -a "$out/build.log"
g=build/dev/src/gpuvs
{ nvidia-smi topo -m; nvidia-smi nvlink -s -i 0 | head -20;
  nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,pcie.link.gen.max,pcie.link.width.max --format=csv; } > "$out/topo.txt" 2>&1

t0=$(ms)
timeout "$(cap 60)" $g bench peer --time-cap 0.5 --out "$out/runs2" > "$out/bench.txt" 2>&1
echo "bench peer rc=$? wall_ms=$(( $(ms) - t0 ))" | tee -a "$out/bench.txt"
t0=$(ms)
CUDA_VISIBLE_DEVICES=0 timeout "$(cap 110)" $g bench memory host launch --time-cap 0.5 --out "$out/runs1" >> "$out/bench.txt" 2>&1
echo "bench memory host launch rc=$? wall_ms=$(( $(ms) - t0 ))" | tee -a "$out/bench.txt"
t0=$(ms)
timeout "$(cap 70)" build/dev/tests/test_gpu --gtest_filter='HbmStream*:StreamValues*:Pattern*:Chase*:Cache*:Latency*:Capacity*:HostLink*:Peer*:Launch*:DeviceResources*' > "$out/tests.txt" 2>&1
echo "tests rc=$? wall_ms=$(( $(ms) - t0 ))" | tee -a "$out/tests.txt"
t0=$(ms)
CUDA_VISIBLE_DEVICES=0 timeout "$(cap 40)" $g bench memory host launch peer --quick --out /tmp/quick > "$out/quick.txt" 2>&1
echo "quick rc=$? wall_ms=$(( $(ms) - t0 ))" | tee -a "$out/quick.txt"
wait
timeout "$(cap 25)" /tmp/ladder 8 16 > "$out/ladder.txt" 2>&1
echo "ladder rc=$?" >> "$out/ladder.txt"
t0=$(ms)
CUDA_VISIBLE_DEVICES=1 timeout "$(cap 40)" $g bench host --quick --out /tmp/quick >> "$out/bench.txt" 2>&1
echo "bench host gpu1 quick rc=$? wall_ms=$(( $(ms) - t0 ))" | tee -a "$out/bench.txt"
grep -E "^\[  (FAILED|PASSED|SKIPPED) |tests rc" "$out/tests.txt" | head -20
echo "total wall_ms=$(( $(ms) - t_start ))"
ls -la "$out" "$out/runs1" "$out/runs2"
