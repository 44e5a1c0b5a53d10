#include "bench/pattern.h"

#include "gpu/check.h"
#include "gpu/device.h"

namespace gpuvs {

namespace {

constexpr int kBlock = 256;

// The value every 32-bit word i holds: distinct neighbours, no period shorter than
// 2^32, never equal to its own poison (~pattern).
__device__ inline uint32_t pattern(uint64_t i) {
  uint64_t x = i * 0x9E3779B97F4A7C15ull;
  x ^= x >> 29;
  return static_cast<uint32_t>(x) ^ static_cast<uint32_t>(x >> 32);
}

int grid_for(size_t words) {
  int device = 0, sms = 0;
  GPUVS_CUDA_CHECK(cudaGetDevice(&device));
  GPUVS_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const size_t needed = (words + kBlock - 1) / kBlock;
  return static_cast<int>(needed < size_t(sms) * 8 ? (needed ? needed : 1) : size_t(sms) * 8);
}

// Launch: kBlock threads, grid-stride over the words.
__global__ void fill_kernel(uint32_t* __restrict__ words, size_t n_words, bool poison) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n_words;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const uint32_t p = pattern(i);
    words[i] = poison ? ~p : p;
  }
}

// counters[0] += mismatches; counters[1] = min(counters[1], index of a mismatch).
__global__ void check_kernel(const uint32_t* __restrict__ words, size_t n_words,
                             unsigned long long* counters) {
  unsigned long long local = 0;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n_words;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    if (words[i] != pattern(i)) {
      ++local;
      atomicMin(&counters[1], static_cast<unsigned long long>(i));
    }
  }
  if (local) atomicAdd(&counters[0], local);
}

}  // namespace

void fill_pattern(void* buffer, size_t bytes, bool poison, cudaStream_t stream) {
  const size_t words = bytes / sizeof(uint32_t);
  fill_kernel<<<grid_for(words), kBlock, 0, stream>>>(static_cast<uint32_t*>(buffer), words,
                                                      poison);
  GPUVS_CUDA_CHECK_LAUNCH();
}

PatternCheck check_pattern(const void* buffer, size_t bytes, cudaStream_t stream) {
  PatternCheck result;
  result.words = bytes / sizeof(uint32_t);
  DeviceBuffer counters(2 * sizeof(unsigned long long));
  auto* c = counters.as<unsigned long long>();
  GPUVS_CUDA_CHECK(cudaMemsetAsync(c, 0, sizeof(unsigned long long), stream));
  GPUVS_CUDA_CHECK(cudaMemsetAsync(c + 1, 0xFF, sizeof(unsigned long long), stream));
  check_kernel<<<grid_for(result.words), kBlock, 0, stream>>>(static_cast<const uint32_t*>(buffer),
                                                              result.words, c);
  GPUVS_CUDA_CHECK_LAUNCH();
  unsigned long long host[2] = {0, 0};
  GPUVS_CUDA_CHECK(cudaMemcpyAsync(host, c, sizeof(host), cudaMemcpyDeviceToHost, stream));
  GPUVS_CUDA_CHECK(cudaStreamSynchronize(stream));
  result.mismatches = host[0];
  result.first_bad = host[1];
  return result;
}

}  // namespace gpuvs
