#include "bench/common/pattern.h"

#include "gpu/check.h"
#include "gpu/device.h"

namespace gpuvs {

namespace {

constexpr int kBlock = 256;

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
    const uint32_t p = pattern_word(i);
    words[i] = poison ? ~p : p;
  }
}

// counters[0] += mismatches; counters[1] = min(counters[1], index of a mismatch).
__global__ void check_kernel(const uint32_t* __restrict__ words, size_t n_words,
                             unsigned long long* counters) {
  unsigned long long local = 0;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n_words;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    if (words[i] != pattern_word(i)) {
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

PatternCheck check_pattern(const void* buffer, size_t bytes, cudaStream_t stream,
                           unsigned long long* scratch) {
  PatternCheck result;
  result.words = bytes / sizeof(uint32_t);
  DeviceBuffer counters(scratch ? 0 : 2 * sizeof(unsigned long long));
  auto* c = scratch ? scratch : counters.as<unsigned long long>();
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

void fill_pattern_host(void* buffer, size_t bytes, bool poison) {
  auto* words = static_cast<uint32_t*>(buffer);
  const uint32_t flip = poison ? ~0u : 0u;
  for (size_t i = 0, n = bytes / sizeof(uint32_t); i < n; ++i)
    words[i] = pattern_word(i) ^ flip;
}

PatternCheck check_pattern_host(const void* buffer, size_t bytes) {
  PatternCheck result;
  result.words = bytes / sizeof(uint32_t);
  const auto* words = static_cast<const uint32_t*>(buffer);
  for (size_t i = 0; i < result.words; ++i) {
    if (words[i] != pattern_word(i)) {
      if (result.mismatches == 0) result.first_bad = i;
      ++result.mismatches;
    }
  }
  return result;
}

}  // namespace gpuvs
