// Batch normalisation over NHWC activations (M = N*H*W rows of C channels), fused
// with ReLU and the residual add, forward and backward. Statistics and parameter
// gradients accumulate in FP32 whatever the storage type; per-block partial sums go
// to a scratch buffer and are reduced in a fixed order, so results are
// deterministic (no atomics). Training normalises with the biased batch variance and
// updates running stats like PyTorch (momentum, unbiased running_var); inference
// uses the running stats.
//
// Launch assumptions: C is a power of two >= 8 (16-byte vectors over C; ResNet's
// channel counts all are), every pointer 16-byte aligned.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "models/layers/dtype.h"

namespace gpuvs::models {

struct BnShape {
  int64_t m = 0;  // rows N*H*W
  int c = 0;      // channels
  DType dtype = DType::kF32;
};

// Floats of scratch the kernels need for this shape (partial sums).
int64_t bn_partials_floats(const BnShape& s);

struct BnForwardArgs {
  const void* x = nullptr;         // (M, C) BN input (a conv output)
  void* y = nullptr;               // (M, C) act(BN(x) [+ residual])
  const void* residual = nullptr;  // (M, C) or null
  bool relu = true;
  bool train = true;              // batch statistics (and running-stat update)
  const float* gamma = nullptr;   // (C)
  const float* beta = nullptr;    // (C)
  float* running_mean = nullptr;  // (C)
  float* running_var = nullptr;   // (C)
  float* save_mean = nullptr;     // (C) batch mean, for backward
  float* save_invstd = nullptr;   // (C) 1/sqrt(var + eps), for backward
  float* scale_shift = nullptr;   // (2, C) scratch
  float* partials = nullptr;      // bn_partials_floats()
  float momentum = 0.1f;
  float eps = 1e-5f;
};
void bn_forward(const BnShape& s, const BnForwardArgs& a, cudaStream_t stream);

struct BnBackwardArgs {
  const void* dy = nullptr;  // (M, C) gradient of act(BN(x) [+ residual])
  // (M, C) that output, for the ReLU mask (y > 0); needed where a residual was
  // added before the ReLU. Null: the mask is x*scale + shift > 0 from scale_shift.
  const void* y = nullptr;
  const float* scale_shift = nullptr;  // (2, C) the forward's (BnForwardArgs::scale_shift)
  const void* x = nullptr;             // (M, C) BN input
  void* dx = nullptr;                  // (M, C) gradient of x; may be dy (in place)
  void* g_out = nullptr;  // (M, C) or null: dy through the ReLU (the residual's gradient)
  bool relu = true;
  const float* gamma = nullptr;        // (C)
  const float* save_mean = nullptr;    // (C)
  const float* save_invstd = nullptr;  // (C)
  void* dgamma = nullptr;              // (C) storage dtype
  void* dbeta = nullptr;               // (C) storage dtype
  bool accumulate = false;             // add to dgamma/dbeta instead of overwriting
  float* coef = nullptr;               // (3, C) scratch
  float* partials = nullptr;           // bn_partials_floats()
};
void bn_backward(const BnShape& s, const BnBackwardArgs& a, cudaStream_t stream);

}  // namespace gpuvs::models
