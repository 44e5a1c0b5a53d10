// Pointer-chase kernels; the chain's definition is in chase_kernels.h.
#include "bench/common/chase_kernels.h"
#include "gpu/check.h"

namespace gpuvs {

namespace {

// Launch: 256 threads, grid-stride over the nodes.
__global__ void init_chase_kernel(char* buffer, uint64_t nodes) {
  for (uint64_t x = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; x < nodes;
       x += static_cast<uint64_t>(gridDim.x) * blockDim.x) {
    const uint64_t next = reinterpret_cast<uint64_t>(buffer + chase_next(x, nodes) * kChaseStride);
    *reinterpret_cast<uint64_t*>(buffer + x * kChaseStride) = next;
  }
}

// Launch: 256 threads, grid-stride; the sink write never happens (no node holds 0)
// but keeps the loads alive.
__global__ void warm_chase_kernel(const char* buffer, uint64_t nodes, uint64_t* sink) {
  uint64_t acc = 0;
  for (uint64_t x = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; x < nodes;
       x += static_cast<uint64_t>(gridDim.x) * blockDim.x)
    acc |= __ldcg(reinterpret_cast<const unsigned long long*>(buffer + x * kChaseStride)) == 0;
  if (acc) *sink = acc;
}

__global__ void reset_chase_kernel(uint64_t* state, const char* buffer) {
  *state = reinterpret_cast<uint64_t>(buffer);
}

// Launch: 1 thread.
template <bool Bypass>
__global__ void chase_kernel(uint64_t* state, int64_t steps) {
  uint64_t p = *state;
#pragma unroll 4
  for (int64_t s = 0; s < steps; ++s) {
    if constexpr (Bypass) {
      asm volatile("ld.global.cv.u64 %0, [%1];" : "=l"(p) : "l"(p));
    } else {
      asm volatile("ld.global.u64 %0, [%1];" : "=l"(p) : "l"(p));
    }
  }
  *state = p;
}

unsigned grid_for(uint64_t nodes) {
  int device = 0, sms = 0;
  GPUVS_CUDA_CHECK(cudaGetDevice(&device));
  GPUVS_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const uint64_t needed = (nodes + 255) / 256;
  const uint64_t cap = static_cast<uint64_t>(sms) * 8;
  return static_cast<unsigned>(needed < cap ? (needed ? needed : 1) : cap);
}

}  // namespace

void init_chase(void* buffer, uint64_t nodes, cudaStream_t stream) {
  init_chase_kernel<<<grid_for(nodes), 256, 0, stream>>>(static_cast<char*>(buffer), nodes);
  GPUVS_CUDA_CHECK_LAUNCH();
}

void warm_chase(const void* buffer, uint64_t nodes, cudaStream_t stream) {
  // The sink is the first node's own slot: never written, since no node holds 0.
  warm_chase_kernel<<<grid_for(nodes), 256, 0, stream>>>(
      static_cast<const char*>(buffer), nodes, static_cast<uint64_t*>(const_cast<void*>(buffer)));
  GPUVS_CUDA_CHECK_LAUNCH();
}

void reset_chase(uint64_t* state, const void* buffer, cudaStream_t stream) {
  reset_chase_kernel<<<1, 1, 0, stream>>>(state, static_cast<const char*>(buffer));
  GPUVS_CUDA_CHECK_LAUNCH();
}

void launch_chase(uint64_t* state, int64_t steps, bool bypass, cudaStream_t stream) {
  if (bypass) {
    chase_kernel<true><<<1, 1, 0, stream>>>(state, steps);
  } else {
    chase_kernel<false><<<1, 1, 0, stream>>>(state, steps);
  }
  GPUVS_CUDA_CHECK_LAUNCH();
}

}  // namespace gpuvs
