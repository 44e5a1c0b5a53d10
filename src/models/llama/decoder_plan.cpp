// The decoder's plan: every buffer's size and offset from the configuration alone
// (decoder_impl.h).
#include <cuda_runtime_api.h>

#include "models/llama/decoder_impl.h"
#include "models/llama/shapes.h"

namespace gpuvs::models::llama::decoder_detail {

Plan plan_of(const DecoderConfig& cfg, int sms) {
  const Shape& s = cfg.shape;
  Plan p;
  p.es = dtype_size(cfg.dtype);
  p.cache_es = cfg.fp8_cache ? 1 : p.es;
  p.c = s.hidden;
  p.qd = int64_t(s.heads) * s.head_dim();
  p.kvd = s.kv_dim();
  p.inter = s.intermediate;
  p.vocab = s.vocab;
  p.width = p.qd + 2 * p.kvd;
  auto tensor = [&](int64_t elements, int meta = -1) {
    const size_t at = p.wl.add(size_t(elements), meta >= 0 ? 1 : p.es);
    p.tensors.push_back({at, elements, meta});
    if (meta >= 0) p.largest_fp8 = std::max(p.largest_fp8, elements);
    return at;
  };
  auto proj = [&](int64_t elements, int layer, Proj k) {
    return tensor(elements, cfg.fp8_weights ? layer * kProjs + k : -1);
  };
  p.embed_at = tensor(p.vocab * p.c);
  for (int l = 0; l < s.layers; ++l) {
    LayerOffsets o{};
    o.attn_norm = tensor(p.c);
    o.wqkv = proj(p.width * p.c, l, kQkv);
    o.wo = proj(p.c * p.qd, l, kO);
    o.mlp_norm = tensor(p.c);
    o.wgu = proj(2 * p.inter * p.c, l, kGu);
    o.wdown = proj(p.c * p.inter, l, kDown);
    p.layers.push_back(o);
  }
  p.final_norm_at = tensor(p.c);
  p.head_at = s.tied_embeddings ? p.embed_at : tensor(p.vocab * p.c);

  p.cache_layer_bytes = align_up(size_t(cfg.batch) * cfg.max_context * p.kvd * p.cache_es);
  p.cache_bytes = 2 * size_t(s.layers) * p.cache_layer_bytes;

  p.decode_splits = attention_splits(cfg.batch, s.heads, cfg.max_context, sms);
  p.rows = int64_t(cfg.batch) * cfg.prompt;
  // cuBLASLt's FP8 GEMMs run on a multiple of 16 rows; the rows past the batch's are
  // computed and never read.
  p.rows_alloc = round_up(p.rows, 16);
  const int64_t ra = p.rows_alloc;
  Layout& al = p.al;
  p.x_at = al.add(size_t(ra * p.c), p.es);
  p.h_at = al.add(size_t(ra * p.c), p.es);
  p.qkv_at = al.add(size_t(ra * p.width), p.es);
  p.attn_at = al.add(size_t(ra * p.qd), p.es);
  p.gu_at = al.add(size_t(ra * 2 * p.inter), p.es);
  p.a_at = al.add(size_t(ra * p.inter), p.es);
  p.last_at = al.add(size_t(cfg.batch * p.c), p.es);
  p.last_norm_at = al.add(size_t(cfg.batch * p.c), p.es);
  p.logits_at = al.add(size_t(cfg.batch * p.vocab), sizeof(float));
  p.freq_at = al.add(size_t(s.head_dim() / 2), sizeof(float));
  p.part_at =
      al.add(size_t(attention_partial_floats(cfg.batch, s.heads, s.head_dim(), p.decode_splits)),
             sizeof(float));
  p.prompt_at = al.add(size_t(p.rows), sizeof(int32_t));
  p.next_at = al.add(size_t(cfg.batch), sizeof(int32_t));
  p.pos_at = al.add(1, sizeof(int));
  p.ws_at = al.add(bert::kGemmWorkspaceBytes, 1);
  if (cfg.fp8_weights) {
    p.x8_at = al.add(size_t(ra * std::max({p.c, p.qd, p.inter})), 1);
    // Weight metas (kProjs per layer), then the inputs' (as many).
    p.metas_bytes = 2 * size_t(s.layers) * kProjs * sizeof(bert::Fp8Meta);
  }
  return p;
}

int sm_count(int device) {
  int sms = 0;
  GPUVS_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return sms;
}

}  // namespace gpuvs::models::llama::decoder_detail
