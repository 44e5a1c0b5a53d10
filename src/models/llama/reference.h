// A plain C++ Llama forward pass in FP32 (sums in FP64), written from transformers'
// LlamaForCausalLM: the yardstick the GPU decoder is checked against on small shapes
// in the GPU tests. Far too slow for the published sizes; not used for any figure.
#pragma once

#include <cstdint>
#include <vector>

#include "models/llama/shapes.h"

namespace gpuvs::models::llama {

// The weights in PyTorch's layouts: nn.Linear (out, in), embeddings (V, C).
struct HostWeights {
  struct Layer {
    std::vector<float> attn_norm;       // (C)
    std::vector<float> wq, wk, wv, wo;  // (H*D, C), (KV, C), (KV, C), (C, H*D)
    std::vector<float> mlp_norm;        // (C)
    std::vector<float> gate, up, down;  // (I, C), (I, C), (C, I)
  };
  std::vector<float> embed;  // (V, C)
  std::vector<Layer> layers;
  std::vector<float> final_norm;  // (C)
  std::vector<float> lm_head;     // (V, C); empty when tied to `embed`
};

// Logits (batch, seq, V) of tokens (batch, seq) at positions 0 .. seq - 1, causal.
std::vector<float> reference_logits(const Shape& shape, const HostWeights& w,
                                    const std::vector<int32_t>& tokens, int batch, int seq);

}  // namespace gpuvs::models::llama
