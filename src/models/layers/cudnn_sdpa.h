// cuDNN's fused scaled-dot-product attention (its FlashAttention-2-style engines),
// reached through the cuDNN graph (backend) API without the C++ frontend: the forward
// and backward are each one operation graph of matmuls, pointwise operations and
// reductions in the pattern cuDNN's SDPA engines take (the scores scaled, the causal
// mask as a row >= column select, the softmax with its log-sum-exp "stats" kept for
// the backward; the backward recomputes the probabilities from the stats), which
// cuDNN's heuristics map to a single fused kernel per pass. No probabilities in memory.
//
// Layouts: q (B, H, T, D), k and v (B, G, T, D) head-major and contiguous (G divides H:
// grouped-query attention); o and d_o either head-major like q or token-major
// (B, T, H * D), as the projection that reads the output wants it; stats (B, H, T)
// FP32, natural-log log-sum-exp of the scaled, masked scores; dq like q, dk and dv like
// k and v. Every tensor bf16 except the stats.
//
// The backward adds dq in FP32 through atomics (cuDNN's default on Hopper), so it is
// not bit-for-bit repeatable; a caller that must be deterministic uses its own kernels.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/error.h"

namespace gpuvs::models {

struct SdpaShape {
  int batch = 0, heads = 0, kv_heads = 0, seq = 0, head_dim = 0;
  float scale = 0.125f;
  bool causal = true;
  bool o_tokens = false;  // o and d_o token-major (B, T, H * D) instead of (B, H, T, D)
};

// cuDNN has no engine for this graph on this GPU (or this cuDNN is too old for it): the
// caller can fall back to other kernels; the message says which pass and why.
class SdpaUnsupported : public Error {
 public:
  explicit SdpaUnsupported(std::string message) : Error(std::move(message)) {}
};

class CudnnSdpa {
 public:
  // Builds the forward plan, and the backward's where `training`, on the current
  // device. Throws SdpaUnsupported (above), OutOfMemoryError, or Error for any other
  // cuDNN failure.
  CudnnSdpa(const SdpaShape& shape, bool training);
  ~CudnnSdpa();
  CudnnSdpa(const CudnnSdpa&) = delete;
  CudnnSdpa& operator=(const CudnnSdpa&) = delete;

  const SdpaShape& shape() const { return shape_; }
  // Device scratch both passes need (the plans' own workspace, and the backward's
  // FP32 dq accumulator and rowsum(d_o o)); one buffer serves both.
  size_t workspace_bytes() const { return workspace_bytes_; }
  // "cuDNN 9.14.0 SDPA (engines 8 and 9)": the library version the process loaded and
  // the global index of the engine cuDNN's heuristics chose for each pass.
  std::string describe() const;

  // Enqueued on `stream`; nothing allocated, so both can be captured in a CUDA graph.
  void forward(const void* q, const void* k, const void* v, void* o, float* stats, void* workspace,
               cudaStream_t stream);
  void backward(const void* q, const void* k, const void* v, const void* o, const void* d_o,
                const float* stats, void* dq, void* dk, void* dv, void* workspace,
                cudaStream_t stream);

 private:
  struct Plans;
  SdpaShape shape_;
  std::unique_ptr<Plans> plans_;
  size_t workspace_bytes_ = 0;
};

}  // namespace gpuvs::models
