// Pooling over NHWC activations: max pool 3x3 stride 2 padding 1 (ResNet's stem)
// with the position of each maximum kept for backward, and global average pooling.
// Launch assumptions: C a multiple of 8, pointers 16-byte aligned.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "models/layers/dtype.h"

namespace gpuvs::models {

struct PoolShape {
  int n = 0, h = 0, w = 0, c = 0;  // input (N, H, W, C)
  DType dtype = DType::kF32;
};

// Output size of the 3x3/2 pad 1 max pool.
inline int maxpool_out(int in) {
  return (in + 2 - 3) / 2 + 1;
}

// y (N,P,Q,C) = max over each window of x (N,H,W,C); argmax (N,P,Q,C) the window
// position 0..8 of the first maximum (row-major), or null when not training.
void maxpool_forward(const PoolShape& s, const void* x, void* y, uint8_t* argmax,
                     cudaStream_t stream);
// dx (N,H,W,C) = sum of dy over the windows whose maximum sat at that position.
void maxpool_backward(const PoolShape& s, const void* dy, const uint8_t* argmax, void* dx,
                      cudaStream_t stream);

// y (N,C) = mean of x (N,H,W,C) over H*W.
void avgpool_forward(const PoolShape& s, const void* x, void* y, cudaStream_t stream);
// dx (N,H,W,C) = dy (N,C) / (H*W).
void avgpool_backward(const PoolShape& s, const void* dy, void* dx, cudaStream_t stream);

}  // namespace gpuvs::models
