// The encoder's four dense layers by name: what BertLarge's steps pass to its dense
// forward and backward, and their fp8 profile regions.
#pragma once

#include <cstdint>

namespace gpuvs::models::bert {

// The encoder's four dense layers, in the order of a layer's forward pass.
enum class EncoderDense { kQkv, kAttentionOut, kFfn1, kFfn2 };
constexpr int kEncoderDenseCount = 4;

// One encoder dense layer's backward for layer `layer`: dW (+)= dy^T x and
// dx = dy W + beta_dx dx.
struct DenseBackward {
  EncoderDense which = EncoderDense::kQkv;
  int layer = 0;
  const void* x = nullptr;   // (N, in) the layer's input
  const void* dy = nullptr;  // (N, out)
  void* dx = nullptr;        // (N, in)
  float beta_dx = 0;         // 1: add into dx (the residual's gradient already there)
  int64_t w_off = 0;         // W in the flat parameter arrays (ParamLayout)
  bool accumulate = false;   // add dW into the gradient (micro-steps)
  // fp8: the caller fused dy's cast into the kernel that produced it (the GELU's gradient).
  bool cast_done = false;
};

inline int dense_index(EncoderDense w) {
  return static_cast<int>(w);
}

// fp8 profile regions of the encoder's dense layers ([backward][dense_index(which)]): the
// casts (amax, transposes), the GEMMs, and the region the layer's other work is in
// (marked again after the GEMMs).
struct DenseRegions {
  const char* cast;
  const char* gemm;
  const char* rest;
};
inline constexpr DenseRegions kDenseRegions[2][kEncoderDenseCount] = {
    {{"fwd qkv fp8 cast", "fwd qkv fp8 gemm", "fwd qkv"},
     {"fwd attention out fp8 cast", "fwd attention out fp8 gemm", "fwd attention out+ln"},
     {"fwd ffn1 fp8 cast", "fwd ffn1 fp8 gemm", "fwd ffn1+gelu"},
     {"fwd ffn2 fp8 cast", "fwd ffn2 fp8 gemm", "fwd ffn2+ln"}},
    {{"bwd qkv fp8 cast", "bwd qkv fp8 gemm", "bwd qkv"},
     {"bwd attention out fp8 cast", "bwd attention out fp8 gemm", "bwd attention out+ln"},
     {"bwd ffn1 fp8 cast", "bwd ffn1 fp8 gemm", "bwd ffn1+gelu"},
     {"bwd ffn2 fp8 cast", "bwd ffn2 fp8 gemm", "bwd ffn2+ln"}},
};

}  // namespace gpuvs::models::bert
