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

// Where the decoder's FP8 rounds (decoder.h), rounded alike to E4M3 (tensor_file.h's
// round_to_e4m3): the cache's keys and values (stored divided by cache_scale), and the
// inputs of layer l's projection k (0 QKV, 1 attention output, 2 gate/up, 3 down)
// times input_scales[4 l + k] at the positions below `rounded_positions` (those the
// GPU ran through cuBLASLt's FP8 GEMMs: the prompt, or every position).
struct Fp8Rounding {
  bool cache = false;
  float cache_scale = 1.0f;
  std::vector<float> input_scales;  // empty: no input rounded
  int rounded_positions = 0;
};

// Logits (batch, seq, V) of tokens (batch, seq) at positions 0 .. seq - 1, causal.
std::vector<float> reference_logits(const Shape& shape, const HostWeights& w,
                                    const std::vector<int32_t>& tokens, int batch, int seq,
                                    const Fp8Rounding& fp8 = {});

}  // namespace gpuvs::models::llama
