// The Llama decoder for inference, natively: a prompt of `prompt` tokens for each of
// `batch` sequences through every layer at once (prefill), then one token per
// sequence per step against the KV cache (decode), each step choosing the next token
// greedily on the GPU. Weights are random, generated in place from the seed: nothing
// is downloaded, and the same shape and seed give the same weights whatever the batch
// or lengths.
//
// Invariants: all device memory is allocated in the constructor (OutOfMemoryError,
// after freeing what it took, when it does not fit); prefill() and decode_step() only
// enqueue work on stream(), never allocate or synchronise, and read the position from
// the device, so a decode step can be captured once in a CUDA graph and replayed at
// every position.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "models/layers/dtype.h"
#include "models/llama/reference.h"
#include "models/llama/shapes.h"

namespace gpuvs::models::llama {

struct DecoderConfig {
  Shape shape;
  DType dtype = DType::kBF16;  // weights, activations, KV cache
  int batch = 1;
  int prompt = 128;       // tokens per sequence in prefill()
  int max_context = 256;  // prompt + decoded tokens the cache holds
  uint64_t seed = 1;
  // Weights uniform in [-bound, bound): 0.02 * sqrt(3) has transformers' initializer
  // standard deviation 0.02; the RMSNorm weights are 1.
  float init_bound = 0.0346410162f;
  // Decode steps of up to 4 sequences through the decoder's own few-row projections
  // (row_gemm.h) where they fit; false: cuBLASLt's GEMMs at every step, as in prefill.
  bool row_gemms = true;
  // FP8 (compute capability 8.9+; bf16 activations as `--precision fp8` runs, or fp32
  // ones, summed in full FP32, for the exact checks): the four projections of every
  // layer hold their weights in E4M3 with one FP32 scale per tensor (amax / 448, from
  // the weights themselves); the embeddings, the norms and the LM head stay in the
  // activations' type.
  // The few-row decode projections read the E4M3 weights with bf16 inputs; cuBLASLt's
  // FP8 GEMMs (prefill, larger decode batches) also take their inputs in E4M3, each
  // with one static scale per projection and layer, calibrated by the first prefill
  // (after construction or set_weights()), which then runs twice: once to record
  // every input's amax, once with the scales it gives.
  bool fp8_weights = false;
  // The KV cache in E4M3 (bf16 or fp32 activations): keys and values stored divided by
  // cache_scale, saturating; 1 is vLLM's default where no calibrated scale is given.
  bool fp8_cache = false;
  float cache_scale = 1.0f;
};

class Decoder {
 public:
  Decoder(const DecoderConfig& config, int device);
  ~Decoder();
  // The device memory the constructor takes at its peak, for `config` on `device`
  // (weights, cache, activations and the workspace; not cuBLASLt's own), before
  // allocating anything: the largest batch that fits is searched with it.
  static size_t memory_bytes(const DecoderConfig& config, int device);
  Decoder(const Decoder&) = delete;
  Decoder& operator=(const Decoder&) = delete;

  const DecoderConfig& config() const { return config_; }
  cudaStream_t stream() const;

  // The prompt (batch x prompt token ids) from the host, or random ids from `seed`.
  void set_prompt(const std::vector<int32_t>& ids);
  void random_prompt(uint64_t seed);
  // Position back to 0 (the cache is overwritten from there).
  void reset();

  // The prompt through every layer from position 0; the cache then holds it, the
  // position is `prompt`, next_tokens() the greedy choice after it.
  void prefill();
  // next_tokens() through every layer at the current position; the position moves by 1.
  void decode_step();

  // Synchronise and read back (tests, and the run's last step only).
  std::vector<int32_t> next_tokens();
  std::vector<float> logits();  // (batch, vocab) of the last step, FP32
  int position();
  HostWeights download_weights();
  // FP8 weights: the static input scales of every layer's projections (4 per layer:
  // QKV, attention output, gate/up, down), set by the first prefill; empty otherwise.
  std::vector<float> fp8_input_scales();
  // Replaces every weight with `w` (PyTorch's layouts, FP32, rounded to the storage
  // type): a checkpoint or a reference's weights. Throws Error, the tensor named, when
  // a size does not match the shape or the embeddings' tying differs.
  void set_weights(const HostWeights& w);

  // Per-region GPU time of the steps run while on (CUDA events between regions, so the
  // kernels of one region no longer overlap the next's): "embed", "qkv" (RMSNorm and
  // the projection), "rope and cache", "attention", "attention output", "gate and up"
  // (RMSNorm and the projection), "down" (SwiGLU and the projection), "lm head" (the
  // final RMSNorm, the head and the greedy choice), each summed over layers and steps.
  // Steps through the few-row projections have no "rope and cache" (the QKV
  // projection's epilogue does it) and their SwiGLU is in "gate and up".
  // Turning it on starts a new profile. Never on while a step is captured.
  void enable_profile(bool on);
  std::vector<std::pair<std::string, double>> profile_times();
  // Whether decode steps take the few-row projections (DecoderConfig::row_gemms); a
  // graph captured before a change keeps the path it was captured with. Returns
  // whether they now do (false where they do not fit, whatever `on`).
  bool use_row_gemms(bool on);

  // Bytes every decode step reads at least: each weight it uses once
  // (decode_weight_count: the LM head, not an untied embedding table), at its storage
  // size (E4M3 projections with fp8_weights).
  double weight_bytes() const;
  // Bytes of the KV cache per token of context of one sequence (K and V, every layer).
  double cache_bytes_per_token() const;
  // What one decode step reads at least at context `context`: weight_bytes() and every
  // sequence's cache.
  double decode_bytes(int context) const;
  int64_t parameter_count() const;
  // FLOPs of a prefill of the whole prompt and of one decode step at context `context`
  // (2 per weight and token, plus the attention's scores and context).
  double prefill_flops() const;
  double decode_flops(int context) const;

  struct Impl;  // the device state, in decoder_impl.h

 private:
  DecoderConfig config_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpuvs::models::llama
