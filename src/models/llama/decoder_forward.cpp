// One forward pass of the decoder over the layers (decoder_impl.h): prefill through
// cuBLASLt's GEMMs, decode steps of a few rows through the row kernels (row_gemm.h).
#include "core/error.h"
#include "models/llama/decoder_impl.h"
#include "models/llama/row_gemm.h"

namespace gpuvs::models::llama::decoder_detail {

void forward(Decoder::Impl& m, const DecoderConfig& cfg, const StepGemms& g, const int32_t* ids,
             int seq, int splits) {
  const Shape& s = cfg.shape;
  const cudaStream_t st = m.stream.get();
  const int64_t rows = int64_t(cfg.batch) * seq;
  const float eps = float(s.rms_norm_eps);
  // One projection of the decode step's few rows (row_gemm.h).
  const bool few = seq == 1 && m.row_gemms;
  // The decoder's own kernels start early in the few-row decode steps (kernels.h).
  const bool dep = few && m.dependent_launch;
  size_t layer = 0;  // the layer and projection the lambdas below serve
  Proj proj_kind = kQkv;
  RowRope rope;  // the few-row QKV projection's rotary embedding; the layer's caches below
  rope.heads = s.heads;
  rope.kv_heads = s.kv_heads;
  rope.head_dim = s.head_dim();
  rope.max_context = cfg.max_context;
  rope.pos = m.pos;
  rope.inv_freq = m.inv_freq;
  rope.fp8_cache = m.fp8_cache;
  rope.cache_scale = cfg.cache_scale;
  auto project = [&](RowInput in, const void* x, const void* norm, const void* w, int64_t k,
                     int64_t n, bool residual, void* out, RowOutput kind = RowOutput::kPlain) {
    RowGemmArgs a;
    a.output = kind;
    a.rows = cfg.batch;
    a.k = k;
    a.n = n;
    a.dtype = m.dtype;
    a.input = in;
    a.x = x;
    a.norm_weight = norm;
    a.eps = eps;
    a.w = w;
    a.residual = residual ? out : nullptr;
    a.out = out;
    a.out_f32 = out == m.logits;
    a.rope = rope;
    if (m.fp8 && w != m.w(m.plan.head_at)) {
      a.w_fp8 = true;
      a.w_scale = &m.w_meta(layer, proj_kind)->scale_inv;
    }
    row_gemm(a, m.dependent_launch, st);
  };
  // One projection through cuBLASLt: in the activations' type, or (FP8) its input cast
  // to E4M3 with the layer's static input scale first.
  auto gemm = [&](bert::Gemm& gemm, Proj k, const void* in, int64_t in_cols, const void* w,
                  void* out, bool residual) {
    const void* a = in;
    if (m.fp8) {
      cast_e4m3(in, m.dtype, m.x8, rows * in_cols, m.in_meta(layer, k), st);
      gemm.set_fp8_scales(&m.in_meta(layer, k)->scale_inv, &m.w_meta(layer, k)->scale_inv);
      a = m.x8;
    }
    gemm.run(a, w, out, 1.0f, residual ? 1.0f : 0.0f, residual ? out : nullptr, nullptr, m.ws, st);
  };
  RegionTimer& t = m.timer;
  t.mark("embed", st);
  embed(ids, m.w(m.plan.embed_at), m.x, rows, int(m.c), m.dtype, st, dep);
  for (size_t l = 0; l < m.layers().size(); ++l) {
    const LayerOffsets& o = m.layers()[l];
    layer = l;
    t.mark("qkv", st);
    proj_kind = kQkv;
    if (few) {
      // The rotary embedding and the cache write in the projection's epilogue.
      rope.k_cache = m.k_cache(l);
      rope.v_cache = m.v_cache(l);
      project(RowInput::kRmsNorm, m.x, m.w(o.attn_norm), m.w(o.wqkv), m.c, m.width, false, m.qkv,
              RowOutput::kRopeCache);
    } else {
      rms_norm(m.x, m.w(o.attn_norm), m.h, rows, int(m.c), eps, m.dtype, st);
      gemm(*g.qkv, kQkv, m.h, m.c, m.w(o.wqkv), m.qkv, false);
      t.mark("rope and cache", st);
      RopeCacheArgs r;
      r.batch = cfg.batch;
      r.seq = seq;
      r.heads = s.heads;
      r.kv_heads = s.kv_heads;
      r.head_dim = s.head_dim();
      r.max_context = cfg.max_context;
      r.dtype = m.dtype;
      r.pos = m.pos;
      r.inv_freq = m.inv_freq;
      r.qkv = m.qkv;
      r.k_cache = m.k_cache(l);
      r.v_cache = m.v_cache(l);
      r.fp8_cache = m.fp8_cache;
      r.cache_scale = cfg.cache_scale;
      r.dependent_launch = dep;
      rope_and_cache(r, st);
    }
    t.mark("attention", st);
    AttentionArgs at;
    at.batch = cfg.batch;
    at.seq = seq;
    at.heads = s.heads;
    at.kv_heads = s.kv_heads;
    at.head_dim = s.head_dim();
    at.max_context = cfg.max_context;
    at.dtype = m.dtype;
    at.pos = m.pos;
    at.qkv = m.qkv;
    at.k_cache = m.k_cache(l);
    at.v_cache = m.v_cache(l);
    at.fp8_cache = m.fp8_cache;
    at.cache_scale = cfg.cache_scale;
    at.out = m.attn;
    at.splits = splits;
    at.partials = m.partials;
    at.dependent_launch = dep;
    attention(at, st);
    if (few) {
      t.mark("attention output", st);
      proj_kind = kO;
      project(RowInput::kPlain, m.attn, nullptr, m.w(o.wo), m.qd, m.c, true, m.x);
      t.mark("gate and up", st);
      proj_kind = kGu;
      project(RowInput::kRmsNorm, m.x, m.w(o.mlp_norm), m.w(o.wgu), m.c, 2 * m.inter, false, m.a,
              RowOutput::kSwiGLU);
      t.mark("down", st);
      proj_kind = kDown;
      project(RowInput::kPlain, m.a, nullptr, m.w(o.wdown), m.inter, m.c, true, m.x);
      continue;
    }
    t.mark("attention output", st);
    gemm(*g.o, kO, m.attn, m.qd, m.w(o.wo), m.x, true);
    t.mark("gate and up", st);
    rms_norm(m.x, m.w(o.mlp_norm), m.h, rows, int(m.c), eps, m.dtype, st);
    gemm(*g.gu, kGu, m.h, m.c, m.w(o.wgu), m.gu, false);
    t.mark("down", st);
    swiglu(m.gu, m.a, rows, int(m.inter), m.dtype, st);
    gemm(*g.down, kDown, m.a, m.inter, m.w(o.wdown), m.x, true);
  }
  t.mark("lm head", st);
  if (few) {
    project(RowInput::kRmsNorm, m.x, m.w(m.plan.final_norm_at), m.w(m.plan.head_at), m.c, m.vocab,
            false, m.logits);
  } else {
    const void* last = m.x;
    if (seq > 1) {
      gather_last_rows(m.x, m.last, cfg.batch, seq, int(m.c), m.dtype, st);
      last = m.last;
    }
    rms_norm(last, m.w(m.plan.final_norm_at), m.last_norm, cfg.batch, int(m.c), eps, m.dtype, st);
    m.head->run(m.last_norm, m.w(m.plan.head_at), m.logits, 1.0f, 0.0f, nullptr, nullptr, m.ws, st);
  }
  argmax_rows(m.logits, m.next_ids, cfg.batch, int(m.vocab), st, dep);
  advance_position(m.pos, seq, st, dep);
  t.stop(st);
}

}  // namespace gpuvs::models::llama::decoder_detail
