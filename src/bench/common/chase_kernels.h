// Dependent pointer chasing for load latency (memory/latency.cpp, peer/link.cpp).
//
// A working set of `nodes` nodes, kChaseStride bytes apart (one per 128-byte line);
// node x holds the address of node next(x) = (M x + A) mod nodes, an LCG with full
// period (nodes a power of two, A odd, M = 1 mod 4: Hull-Dobell), so the chain is one
// cycle through every node in a scattered order no prefetcher follows. One thread
// loads node after node; each load needs the previous one's value.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "bench/host_device.h"

namespace gpuvs {

inline constexpr size_t kChaseStride = 128;
inline constexpr uint64_t kChaseMul = 0x5851F42D4C957F2Dull;
inline constexpr uint64_t kChaseAdd = 0x14057B7EF767814Full;

GPUVS_HD inline uint64_t chase_next(uint64_t x, uint64_t nodes) {
  return (kChaseMul * x + kChaseAdd) & (nodes - 1);
}

// The node reached from x after `steps` steps, in O(log steps): the LCG is an affine
// map, and powers of an affine map compose by squaring.
inline uint64_t chase_advance(uint64_t x, uint64_t steps, uint64_t nodes) {
  uint64_t acc_mul = 1, acc_add = 0, mul = kChaseMul, add = kChaseAdd;
  for (; steps; steps >>= 1) {
    if (steps & 1) {
      acc_add = mul * acc_add + add;
      acc_mul = mul * acc_mul;
    }
    add = mul * add + add;
    mul = mul * mul;
  }
  return (acc_mul * x + acc_add) & (nodes - 1);
}

// Writes the chain into `buffer` (nodes x kChaseStride bytes); asynchronous.
void init_chase(void* buffer, uint64_t nodes, cudaStream_t stream);
// Reads every node once with many threads: brings a working set that fits into L2.
void warm_chase(const void* buffer, uint64_t nodes, cudaStream_t stream);
// *state = address of node 0 of `buffer`; asynchronous.
void reset_chase(uint64_t* state, const void* buffer, cudaStream_t stream);
// One thread follows `steps` links from *state and stores where it ended in *state.
// bypass: ld.global.cv (no cached copy is trusted: every load goes to the memory
// that owns the line; for peer memory); else plain loads that L1 and L2 may serve.
void launch_chase(uint64_t* state, int64_t steps, bool bypass, cudaStream_t stream);

}  // namespace gpuvs
