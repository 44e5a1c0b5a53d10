#include "check/memtest_kernels.h"

#include "gpu/check.h"

namespace gpuvs::check {

namespace {

constexpr int kBlock = 256;

__device__ __forceinline__ uint32_t pattern_value(const PatternSpec& p, uint64_t i) {
  uint32_t v = p.constant;
  if (p.random) {
    // splitmix64 of (seed, i): no short period, neighbours unrelated.
    uint64_t x = i + p.seed * 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    x ^= x >> 31;
    v = static_cast<uint32_t>(x) ^ static_cast<uint32_t>(x >> 32);
  }
  return p.invert ? ~v : v;
}

__device__ __forceinline__ void record(const ErrorSink& sink, const uint32_t* word,
                                       uint32_t expected, uint32_t actual) {
  atomicAdd(sink.count, 1ull);
  const unsigned long long slot = atomicAdd(sink.claimed, 1ull);
  if (slot < sink.capacity)
    sink.records[slot] = {reinterpret_cast<unsigned long long>(word), expected, actual};
}

// Launch: kBlock threads, grid-stride over the n words.
__global__ void fill_kernel(uint32_t* __restrict__ words, size_t n, uint64_t first, PatternSpec p) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t k = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; k < n; k += stride)
    words[k] = pattern_value(p, first + k);
}

// Launch: kBlock threads, grid-stride over the n words.
__global__ void check_kernel(const uint32_t* __restrict__ words, size_t n, uint64_t first,
                             PatternSpec p, ErrorSink sink) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t k = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; k < n; k += stride) {
    const uint32_t want = pattern_value(p, first + k);
    const uint32_t got = words[k];
    if (got != want) record(sink, words + k, want, got);
  }
}

// Launch: kBlock threads; thread t owns words t, t + stride, t + 2 stride... and walks
// them upwards, or downwards when `descending`.
__global__ void check_and_write_kernel(uint32_t* __restrict__ words, size_t n, uint64_t first,
                                       PatternSpec expect, PatternSpec write, bool descending,
                                       ErrorSink sink) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  const size_t t = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (t >= n) return;
  const size_t owned = (n - t + stride - 1) / stride;
  for (size_t j = 0; j < owned; ++j) {
    const size_t k = t + (descending ? owned - 1 - j : j) * stride;
    const uint32_t want = pattern_value(expect, first + k);
    const uint32_t got = words[k];
    if (got != want) record(sink, words + k, want, got);
    words[k] = pattern_value(write, first + k);
  }
}

unsigned grid_for(size_t n) {
  int device = 0, sms = 0;
  GPUVS_CUDA_CHECK(cudaGetDevice(&device));
  GPUVS_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const size_t needed = (n + kBlock - 1) / kBlock;
  const size_t full = static_cast<size_t>(sms) * 16;  // enough resident warps to saturate HBM
  return static_cast<unsigned>(needed == 0 ? 1 : (needed < full ? needed : full));
}

}  // namespace

void launch_fill(uint32_t* words, size_t n, uint64_t first_index, PatternSpec p, cudaStream_t s) {
  fill_kernel<<<grid_for(n), kBlock, 0, s>>>(words, n, first_index, p);
  GPUVS_CUDA_CHECK_LAUNCH();
}

void launch_check(const uint32_t* words, size_t n, uint64_t first_index, PatternSpec p,
                  ErrorSink sink, cudaStream_t s) {
  check_kernel<<<grid_for(n), kBlock, 0, s>>>(words, n, first_index, p, sink);
  GPUVS_CUDA_CHECK_LAUNCH();
}

void launch_check_and_write(uint32_t* words, size_t n, uint64_t first_index, PatternSpec expect,
                            PatternSpec write, bool descending, ErrorSink sink, cudaStream_t s) {
  check_and_write_kernel<<<grid_for(n), kBlock, 0, s>>>(words, n, first_index, expect, write,
                                                        descending, sink);
  GPUVS_CUDA_CHECK_LAUNCH();
}

}  // namespace gpuvs::check
