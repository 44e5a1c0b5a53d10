// Whole-tensor operations: synthetic inputs generated on the GPU (images ~ N(0, 1)
// per element and labels uniform in [0, classes), both a pure function of (seed,
// index): counter-based hash + Box-Muller, so the same seed gives the same batch on
// any GPU), and casts between FP32 and the storage type.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "models/layers/dtype.h"

namespace gpuvs::models {

struct SyntheticImages {
  int n = 0, h = 0, w = 0;
  int c = 3;         // real channels
  int c_padded = 4;  // stored channels; channels >= c are zero
  DType dtype = DType::kF32;
  int classes = 1000;
};

// x (N, H, W, c_padded), labels (N).
void generate_images(const SyntheticImages& s, uint64_t seed, void* x, int32_t* labels,
                     cudaStream_t stream);

// dst (n) storage dtype = src (n) fp32, and back. For the working copy and for tests.
void cast_from_float(const float* src, void* dst, int64_t n, DType dtype, cudaStream_t stream);
void cast_to_float(const void* src, float* dst, int64_t n, DType dtype, cudaStream_t stream);

}  // namespace gpuvs::models
