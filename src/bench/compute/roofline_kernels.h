// The roofline: FLOP/s against arithmetic intensity (FLOP per byte moved), and the
// measured ridge point where the memory roof meets the compute roof.
//
// Streaming sweeps (CUDA cores): each thread reads one 16-byte vector (4 floats, or
// 4 packed pairs of halves), runs k steps of the FMA chain of fma_kernels.h on every
// lane, and writes the vector back to a second array. Per vector: 32 bytes moved
// (16 read + 16 written) and 4 x lanes x 2 x k FLOP, so intensity = k / 4 FLOP/B for
// FP32 and k / 2 for the packed halves. Arrays are many times the L2, so the low-k
// points measure HBM bandwidth and the high-k points the CUDA cores.
//
// The GEMM sweep (tensor cores) times square BF16 GEMMs from small to large, with
// intensity 2 M N K / bytes(A + B + C + D), the usual convention (C is counted although
// beta = 0 means cuBLASLt does not read it).
//
// Ridge = the sweep's highest FLOP/s / the highest bandwidth (FLOP/s / intensity) of
// the streaming sweep: for the GEMM sweep, the FP32 streaming sweep's bandwidth (the
// small GEMMs run from L2, so they cannot measure HBM).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "bench/compute/fma_kernels.h"

namespace gpuvs {

inline constexpr int kRooflineBlock = 256;

// x[e] = fma_initial(e, 0) for each lane element e of the array (FP32, or FP16/BF16
// for the packed types): values exact in the type, so the CPU knows every input.
void fill_roofline_input(FmaType t, void* x, size_t n16, cudaStream_t stream);

// y = chain^k(x) lane by lane over n16 16-byte vectors; t is kFp32, kFp16x2 or kBf16x2.
void launch_roofline(FmaType t, const void* x, void* y, size_t n16, int k, FmaChain chain,
                     cudaStream_t stream);

}  // namespace gpuvs
