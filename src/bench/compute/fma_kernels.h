// Non-tensor arithmetic peaks: kernels of dependent multiply-add chains.
//
// Each thread keeps kFmaAccumulators independent chains acc = acc * a + b (FMA for
// floating types, HFMA2 on packed pairs, IMAD for INT32) and runs `outer` rounds of
// kFmaUnroll steps on each, so the loop's own instructions are under 1 % of those
// issued. The grid is exactly the blocks that fit on the GPU at once (occupancy x
// SMs): one wave, every SM busy, every block doing the same work. Each thread writes
// one value, the sum of its accumulators, so nothing can be optimised away and the
// result can be checked against the CPU (fma.cpp).
//
// Work counted per launch: threads x outer x kFmaUnroll x kFmaAccumulators
// instructions; 2 FLOP per FMA, 4 per packed HFMA2 (two lanes), 2 OP per IMAD.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "bench/host_device.h"

namespace gpuvs {

enum class FmaType { kFp64, kFp32, kFp16x2, kBf16x2, kInt32 };

inline constexpr int kFmaAccumulators = 8;
inline constexpr int kFmaUnroll = 16;
inline constexpr int kFmaBlock = 256;

// Lanes per instruction (2 for packed halves) and work per lane-instruction.
inline constexpr int fma_lanes(FmaType t) {
  return t == FmaType::kFp16x2 || t == FmaType::kBf16x2 ? 2 : 1;
}
inline constexpr int kWorkPerLane = 2;  // multiply + add

// The chain's constants for `steps` steps per accumulator. Floating types converge
// to 0.75: FP32/FP64 at a rate chosen so the value still depends on every step,
// a = 1 - 2^-s with 2^s about `steps` (a^steps about 1/e); the halves, which have too
// few bits for that, with a = 15/16, so they move for their first ~100 steps and then
// sit at a fixed point (the instructions still run). INT32 is the LCG
// x * 1664525 + 1013904223 (mod 2^32). Every constant and initial value is exact in
// its type.
struct FmaChain {
  double a = 0;
  double b = 0;
};
FmaChain fma_chain(FmaType t, int64_t steps);

// The 32-bit seed of accumulator `slot` (acc * 2 + lane) of thread `thread`.
GPUVS_HD inline uint32_t fma_seed(uint32_t thread, uint32_t slot) {
  uint32_t x = thread * 0x9E3779B9u ^ (slot * 0x85EBCA6Bu + 0x27D4EB2Fu);
  x ^= x >> 16;
  x *= 0x7FEB352Du;
  x ^= x >> 15;
  x *= 0x846CA68Bu;
  x ^= x >> 16;
  return x;
}

// Initial floating value: 0.5 + (seed mod 128) / 256, exact in BF16 and up.
GPUVS_HD inline double fma_initial(uint32_t thread, uint32_t slot) {
  return 0.5 + static_cast<double>(fma_seed(thread, slot) & 127u) * (1.0 / 256);
}

// Blocks of kFmaBlock threads the kernel of `t` keeps resident per SM.
int fma_blocks_per_sm(FmaType t);

// out[thread] = sum of the thread's accumulators after `outer` rounds: summed in the
// lane type's precision order (float for FP32 and the halves, double for FP64,
// uint32 wrap-around for INT32), then widened to double. `blocks` x kFmaBlock threads.
void launch_fma(FmaType t, double* out, int blocks, int64_t outer, FmaChain chain,
                cudaStream_t stream);

// The CPU's value of thread `thread` after `steps` steps per accumulator (defined in
// fma.cpp), and the largest |GPU - CPU| accepted for type `t`: 0 where the
// CPU's arithmetic is the hardware's (FP64, FP32 via std::fma, INT32), one unit in
// the last place per accumulator lane for the halves.
double fma_reference(FmaType t, uint32_t thread, int64_t steps, FmaChain chain);
// One lane's chain on the CPU: `steps` steps of x = x * a + b from x0, in t's lane
// type (FP64, FP32, or one half of a packed pair), returned as a double.
double fma_chain_reference(FmaType t, double x0, int64_t steps, FmaChain chain);
double fma_tolerance(FmaType t);

}  // namespace gpuvs
