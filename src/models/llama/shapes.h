// The published shapes of the Llama decoders gpuvs builds natively, and the arithmetic
// that follows from a shape alone: parameter count, training FLOPs per token (for
// MFU), the KV cache's bytes per token, and the bytes a decode step must read (for the
// bandwidth bound of decoding). Plain C++, tested against the published parameter
// counts; the model itself (kernels, trainer) is built on it.
//
// Shapes: the `config.json` of each model on the Hugging Face hub —
// meta-llama/Llama-3.2-1B, meta-llama/Llama-3.2-3B, meta-llama/Llama-3.1-8B
// (hidden_size, num_hidden_layers, num_attention_heads, num_key_value_heads,
// intermediate_size, vocab_size, tie_word_embeddings, rope_theta,
// max_position_embeddings, rms_norm_eps).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gpuvs::models::llama {

struct Shape {
  std::string_view size;  // "1b", "3b", "8b": what `--size` takes
  std::string_view name;  // "Llama 3.2 1B"
  int hidden = 0;         // d_model
  int layers = 0;
  int heads = 0;         // query heads
  int kv_heads = 0;      // key/value heads (grouped-query attention)
  int intermediate = 0;  // SwiGLU's inner width
  int vocab = 0;
  bool tied_embeddings = false;  // the LM head is the embedding matrix
  double rope_theta = 0;
  int max_context = 0;  // max_position_embeddings
  double rms_norm_eps = 0;
  std::string_view source;  // where the shape comes from
  // rope_scaling of type "llama3" (factor 0: none): the frequencies of long wavelengths
  // divided by `factor`, a smooth blend between low_freq_factor and high_freq_factor
  // of the original context's wavelengths.
  double rope_factor = 0;
  double rope_low_freq_factor = 1;
  double rope_high_freq_factor = 4;
  int rope_original_context = 8192;

  int head_dim() const { return hidden / heads; }
  int kv_dim() const { return kv_heads * head_dim(); }
};

// Every shape, smallest first.
std::span<const Shape> shapes();
// By `--size` ("1b"), nullopt when unknown.
std::optional<Shape> find_shape(std::string_view size);
// "1b, 3b, 8b", for messages.
std::string size_list();

// The rotary embedding's inverse frequencies, head_dim / 2 of them: theta^(-2i / D),
// then the llama3 scaling where rope_factor > 0 (transformers'
// _compute_llama3_parameters). Position p rotates pair (i, i + D/2) by p * f[i].
std::vector<double> rope_inv_freq(const Shape& s);

// Trainable parameters: embeddings (once when tied), per layer the Q, K, V and output
// projections (no biases), the three SwiGLU matrices and two RMSNorm weights, the final
// RMSNorm, and the LM head when it is not tied.
int64_t parameter_count(const Shape& s);

// Training FLOPs per token at sequence length `seq`: 6 N (forward and backward of every
// weight, N = parameter_count) plus attention's 12 L h s (scores and context, forward
// and backward, as PaLM's appendix B counts them, the causal mask not discounted:
// the figure the reference MFU of a PyTorch peer is computed with), or half of that
// with `causal` (the work a causal kernel does).
double train_flops_per_token(const Shape& s, int seq, bool causal = false);

// Bytes of the KV cache one token of context takes: K and V for every layer.
int64_t kv_bytes_per_token(const Shape& s, int bytes_per_value);

// Parameters a decode step reads whole: every weight but an untied embedding table,
// of which the lookup reads only the rows of the step's tokens (a tied table is the
// LM head, read whole).
int64_t decode_weight_count(const Shape& s);

// Bytes one decode step reads: decode_weight_count weights once (`weight_bytes` each)
// plus, for each of `batch` sequences, the KV cache of `context` tokens. The floor of
// a decode step's time is that over the memory bandwidth.
double decode_bytes_per_step(const Shape& s, int weight_bytes, int kv_bytes, int batch,
                             int context);

// Bytes the optimizer needs for AdamW with fp32 master weights in mixed precision:
// per parameter the 16-bit weight and gradient, the fp32 master, m and v (16 bytes),
// activations not included: the floor of training memory.
double adamw_state_bytes(const Shape& s);

}  // namespace gpuvs::models::llama
