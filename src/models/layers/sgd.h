// SGD with momentum and weight decay over all parameters at once (one flat FP32
// master array, one flat momentum array, one flat gradient array in the storage
// type), writing the 16-bit working copy of the weights in the same pass. Weight
// decay applies to the first `n_decay` elements only (the layout puts conv and fc
// weights first, BN parameters and biases after). PyTorch's rule:
//   g = grad / (loss_scale * micro_steps) + wd * w;  v = momentum * v + g;  w -= lr * v
//
// fp16 dynamic loss scaling, all on the GPU: check_finite flags any inf/NaN in the
// gradients, the update is skipped when flagged, and update_loss_scale halves the
// scale on overflow or doubles it after `growth_interval` clean steps (PyTorch's
// GradScaler's backoff and growth, initial scale below).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "models/layers/dtype.h"

namespace gpuvs::models {

struct LossScaleState {
  float scale;
  int32_t good_steps;
  int32_t found_inf;
};
// Lower than GradScaler's 65536: here the BN parameter gradients are fp16 too, and
// at 65536 the stem's weight gradient (|g| ~ 1) overflows fp16's 65504 on the first
// steps (each overflow costs a skipped step). Backoff 0.5, growth 2 every 2000 clean
// steps, like GradScaler.
constexpr float kInitialLossScale = 4096.0f;
constexpr int kLossScaleGrowthInterval = 2000;

struct SgdArgs {
  int64_t n = 0;        // elements, a multiple of 4
  int64_t n_decay = 0;  // first elements that take weight decay, a multiple of 4
  DType grad_dtype = DType::kF32;
  float* master = nullptr;      // (n) fp32
  float* momentum = nullptr;    // (n) fp32
  const void* grads = nullptr;  // (n) grad_dtype
  void* model = nullptr;        // (n) grad_dtype working copy, or null (fp32 storage)
  float lr = 0.1f, momentum_factor = 0.9f, weight_decay = 1e-4f;
  int micro_steps = 1;
  const LossScaleState* scaler = nullptr;  // device, or null (no loss scaling)
};

// Sets scaler->found_inf when any of grads (n, dtype) is inf or NaN.
void check_finite(const void* grads, int64_t n, DType dtype, LossScaleState* scaler,
                  cudaStream_t stream);
void sgd_step(const SgdArgs& a, cudaStream_t stream);
void update_loss_scale(LossScaleState* scaler, cudaStream_t stream);

}  // namespace gpuvs::models
