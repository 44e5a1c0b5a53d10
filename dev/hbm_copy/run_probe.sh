#!/usr/bin/env bash
# First look at the device machine: environment facts the build relies on, the
# ground truth that `gpuvs detect` must match, and the copy-kernel ladder.
set -u
export NCCL_NVLS_ENABLE=0
out=${OUT:-/tmp/out}
mkdir -p "$out"
{
  nvidia-smi -L; nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.limit --format=csv
  cmake --version | head -1; g++ --version | head -1; nvcc --version | tail -1
  for h in cudnn_version.h nccl.h nvml.h CLI/CLI.hpp nlohmann/json.hpp fmt/format.h gtest/gtest.h; do
    echo "$h: $(find / -xdev -name "$(basename $h)" -path "*$h" 2>/dev/null | grep -v -E '/proc/|site-packages/torch' | head -3 | tr '\n' ' ')"
  done
  for l in libcudnn.so libnccl.so libnvidia-ml.so.1; do echo "$l: $(ldconfig -p | grep "$l" | head -2 | tr '\n' ' ')"; done
  ls /usr/local/cuda/lib64 | grep -E 'cudnn|nccl' | head
  grep -E 'CLI11_VERSION ' -r /usr/include/CLI/Version.hpp 2>/dev/null | head -2
  which clang-format clang++ ninja ncu compute-sanitizer
} > "$out/env.txt" 2>&1
nvidia-smi -q > "$out/nvidia-smi-q.txt" 2>&1
nvidia-smi topo -m > "$out/topo.txt" 2>&1
cat "$out/env.txt"
nvcc -O3 -gencode=arch=compute_90,code=sm_90 -o /tmp/ladder dev/hbm_copy/ladder.cu && /tmp/ladder | tee "$out/ladder.txt"
