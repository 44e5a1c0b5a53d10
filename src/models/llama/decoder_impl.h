// The Llama decoder's inside (decoder.h), shared by its three source files: the
// plan of every buffer (decoder_plan.cpp), the device state, and one forward pass over
// the layers (decoder_forward.cpp); decoder.cpp builds the state and answers the
// public calls. Not for use outside the decoder.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "gpu/check.h"
#include "gpu/cublaslt.h"
#include "gpu/device.h"
#include "measure/region_timer.h"
#include "models/bert/gemm.h"
#include "models/bert/kernels.h"
#include "models/llama/decoder.h"
#include "models/llama/kernels.h"

namespace gpuvs::models::llama::decoder_detail {

inline constexpr size_t kAlign = 256;

inline size_t align_up(size_t n) {
  return (n + kAlign - 1) / kAlign * kAlign;
}

// Offsets of named tensors in one buffer.
struct Layout {
  size_t bytes = 0;
  size_t add(size_t elements, size_t elem_bytes) {
    const size_t at = bytes;
    bytes += align_up(elements * elem_bytes);
    return at;
  }
};

struct LayerOffsets {
  size_t attn_norm, wqkv, wo, mlp_norm, wgu, wdown;
};

// The four projections of a layer, in the order of their FP8 metas.
enum Proj { kQkv, kO, kGu, kDown, kProjs };

// The GEMMs of one row count.
struct StepGemms {
  std::unique_ptr<bert::Gemm> qkv, o, gu, down;
};

inline int64_t round_up(int64_t n, int64_t m) {
  return (n + m - 1) / m * m;
}

// Every buffer's size and offsets, from the configuration alone: the constructor
// allocates what this says, and memory_bytes() reports it before allocating.
struct Plan {
  size_t es = 2, cache_es = 2;
  int64_t c = 0, qd = 0, kvd = 0, inter = 0, vocab = 0, width = 0;
  int64_t rows = 0, rows_alloc = 0;  // prefill rows; allocated rows (16 at least, for FP8)
  Layout wl;
  std::vector<LayerOffsets> layers;
  size_t embed_at = 0, final_norm_at = 0, head_at = 0;
  struct Tensor {
    size_t at;
    int64_t elements;
    int meta;  // FP8 weight meta, -1: stored in the activations' type
  };
  std::vector<Tensor> tensors;  // init order
  int64_t largest_fp8 = 0;      // elements of the largest E4M3 tensor
  size_t cache_layer_bytes = 0, cache_bytes = 0;
  Layout al;
  size_t x_at, h_at, qkv_at, attn_at, gu_at, a_at, last_at, last_norm_at, logits_at, freq_at,
      part_at, prompt_at, next_at, pos_at, ws_at, x8_at = 0;
  size_t metas_bytes = 0;  // FP8: a buffer of their own, allocated before the GEMMs
  int decode_splits = 1;
};

// The plan of `cfg` on a GPU of `sms` SMs (the attention's splits depend on them).
Plan plan_of(const DecoderConfig& cfg, int sms);
int sm_count(int device);

}  // namespace gpuvs::models::llama::decoder_detail

namespace gpuvs::models::llama {

struct Decoder::Impl {
  using Plan = decoder_detail::Plan;
  using LayerOffsets = decoder_detail::LayerOffsets;
  using StepGemms = decoder_detail::StepGemms;

  int device = 0;
  Stream stream;
  LtHandle lt;
  DType dtype = DType::kBF16;
  Plan plan;
  size_t es = 2;  // bytes per element
  int64_t c = 0, qd = 0, kvd = 0, inter = 0, vocab = 0, width = 0;

  // Weights.
  DeviceBuffer weights;
  // Caches: K and V per layer, (batch, max_context, KV) each.
  DeviceBuffer cache;
  // Activations and the rest.
  DeviceBuffer act;
  void *x = nullptr, *h = nullptr, *qkv = nullptr, *attn = nullptr, *gu = nullptr, *a = nullptr,
       *last = nullptr, *last_norm = nullptr, *ws = nullptr;
  float *logits = nullptr, *inv_freq = nullptr, *partials = nullptr;
  int32_t *prompt_ids = nullptr, *next_ids = nullptr;
  int* pos = nullptr;
  int prefill_splits = 1, decode_splits = 1;
  // Decode steps through row_gemm() (a few rows: it streams the weights faster than
  // cuBLASLt's tiles and takes RMSNorm and SwiGLU in), each projection started while the
  // kernel before it finishes where the GPU can (compute capability 9.0+).
  bool row_gemms = false, row_gemms_fit = false, dependent_launch = false;
  RegionTimer timer;
  // FP8 (DecoderConfig::fp8_weights): a projection's input in E4M3, and the metas.
  bool fp8 = false, fp8_cache = false;
  uint8_t* x8 = nullptr;
  DeviceBuffer metas_buffer;
  bert::Fp8Meta* metas = nullptr;
  bool calibrated = false;  // the inputs' scales are set

  StepGemms prefill, decode;
  std::unique_ptr<bert::Gemm> head;

  const std::vector<LayerOffsets>& layers() const { return plan.layers; }
  char* w(size_t at) const { return weights.as<char>() + at; }
  void* k_cache(size_t layer) const {
    return cache.as<char>() + 2 * layer * plan.cache_layer_bytes;
  }
  void* v_cache(size_t layer) const {
    return cache.as<char>() + (2 * layer + 1) * plan.cache_layer_bytes;
  }
  // The metas of layer l's projection k: its weight's and its input's.
  bert::Fp8Meta* w_meta(size_t l, int k) const { return metas + l * decoder_detail::kProjs + k; }
  bert::Fp8Meta* in_meta(size_t l, int k) const {
    return metas + (plan.layers.size() + l) * decoder_detail::kProjs + k;
  }
  // Fresh metas (scale 1, no history): `count` from `first`.
  void reset_metas(bert::Fp8Meta* first, size_t count) const {
    const std::vector<bert::Fp8Meta> fresh(count, bert::fp8_meta_init(false, true));
    GPUVS_CUDA_CHECK(cudaMemcpyAsync(first, fresh.data(), count * sizeof(bert::Fp8Meta),
                                     cudaMemcpyHostToDevice, stream.get()));
  }
  // dst (n) E4M3 from src (n) bf16 with the current scaling of `meta`: amax, then the
  // scale from it, then the cast.
  void quantize(const void* src, void* dst, int64_t n, bert::Fp8Meta* meta) const {
    reset_metas(meta, 1);
    cast_e4m3(src, dtype, static_cast<uint8_t*>(dst), n, meta, stream.get());
    bert::update_fp8_metas(meta, 1, stream.get());
    cast_e4m3(src, dtype, static_cast<uint8_t*>(dst), n, meta, stream.get());
  }
};

namespace decoder_detail {

// Every layer over `rows` = batch x seq new tokens from ids, then the LM head over the
// last token of each sequence and the greedy choice; the position moves by seq.
void forward(Decoder::Impl& m, const DecoderConfig& cfg, const StepGemms& g, const int32_t* ids,
             int seq, int splits);

}  // namespace decoder_detail
}  // namespace gpuvs::models::llama
