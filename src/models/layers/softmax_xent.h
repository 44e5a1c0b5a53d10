// The classifier's bias and the softmax cross-entropy loss, forward and backward in
// one pass over the FP32 logits: logits += bias, per-row loss, and
// dlogits = (softmax - onehot) * loss_scale / N in the storage type. The mean loss
// and the bias gradient are reduced in a fixed order (deterministic).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "models/layers/dtype.h"

namespace gpuvs::models {

struct XentArgs {
  int n = 0, classes = 0;
  DType dtype = DType::kF32;
  float* logits = nullptr;            // (N, classes) fp32, bias added in place
  const float* bias = nullptr;        // (classes)
  const int32_t* labels = nullptr;    // (N)
  const float* loss_scale = nullptr;  // (1) device, or null for 1
  float* row_loss = nullptr;          // (N) scratch
  float* loss = nullptr;              // (1) mean loss (unscaled)
  void* dlogits = nullptr;            // (N, classes) storage dtype
  void* dbias = nullptr;              // (classes) storage dtype
  bool accumulate = false;            // add to dbias
};
void softmax_xent_forward_backward(const XentArgs& a, cudaStream_t stream);

// Inference: logits (N, classes) += bias.
void add_bias(float* logits, const float* bias, int n, int classes, cudaStream_t stream);

}  // namespace gpuvs::models
