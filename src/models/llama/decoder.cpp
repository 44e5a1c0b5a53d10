// The Llama decoder (decoder.h): weights, KV cache and activations in a few
// buffers, BERT's cuBLASLt GEMM wrapper for every projection, the kernels of
// kernels.h for the rest.
#include "models/llama/decoder.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"
#include "gpu/check.h"
#include "gpu/cublaslt.h"
#include "gpu/device.h"
#include "gpu/gemm_spec.h"
#include "measure/region_timer.h"
#include "models/bert/gemm.h"
#include "models/bert/kernels.h"
#include "models/config.h"
#include "models/layers/gemm_dtype.h"
#include "models/llama/kernels.h"
#include "models/llama/row_gemm.h"
#include "models/tensor_file.h"

namespace gpuvs::models::llama {

namespace {

constexpr size_t kAlign = 256;

size_t align_up(size_t n) {
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

int64_t round_up(int64_t n, int64_t m) {
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

}  // namespace

struct Decoder::Impl {
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
  bert::Fp8Meta* w_meta(size_t l, int k) const { return metas + l * kProjs + k; }
  bert::Fp8Meta* in_meta(size_t l, int k) const {
    return metas + (plan.layers.size() + l) * kProjs + k;
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

Decoder::Decoder(const DecoderConfig& config, int device)
    : config_(config), impl_(std::make_unique<Impl>()) {
  const Shape& s = config_.shape;
  if (s.hidden <= 0 || s.layers <= 0 || s.heads <= 0 || s.kv_heads <= 0 ||
      s.heads % s.kv_heads != 0 || s.hidden % s.heads != 0)
    throw UsageError(fmt::format("llama: the shape of {} is not a decoder gpuvs builds", s.name));
  if (config_.batch < 1 || config_.prompt < 1 || config_.max_context < config_.prompt)
    throw UsageError(fmt::format("llama: batch {} with prompt {} in a context of {}", config_.batch,
                                 config_.prompt, config_.max_context));
  if (config_.max_context > s.max_context)
    throw UsageError(fmt::format("llama: a context of {} tokens is beyond {}'s {}",
                                 config_.max_context, s.name, s.max_context));
  if ((config_.fp8_weights || config_.fp8_cache) && config_.dtype == DType::kF16)
    throw UsageError("llama: FP8 weights and the FP8 cache take bf16 or fp32 activations");
  if (!(config_.cache_scale > 0.0f) || !std::isfinite(config_.cache_scale))
    throw UsageError("llama: the FP8 cache's scale must be a positive number");
  DeviceScope scope(device);
  int major = 0, minor = 0;
  GPUVS_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  GPUVS_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  if (config_.fp8_weights || config_.fp8_cache) {
    if (const auto why = fp8_refusal(major, minor)) throw UsageError("llama: " + *why);
  }
  Impl& m = *impl_;
  m.device = device;
  m.dtype = config_.dtype;
  m.plan = plan_of(config_, sm_count(device));
  const Plan& p = m.plan;
  m.es = p.es;
  m.c = p.c;
  m.qd = p.qd;
  m.kvd = p.kvd;
  m.inter = p.inter;
  m.vocab = p.vocab;
  m.width = p.width;
  m.fp8 = config_.fp8_weights;
  m.fp8_cache = config_.fp8_cache;

  // The metas first, then the GEMMs: cuBLASLt's FP8 GEMMs are tried at construction
  // on scratch operands of their full size (bert/gemm.h), freed before the decoder's
  // own buffers are allocated, so that they never add to its peak.
  if (m.fp8) {
    m.metas_buffer = DeviceBuffer(p.metas_bytes);
    m.metas = m.metas_buffer.as<bert::Fp8Meta>();
    m.reset_metas(m.metas, 2 * m.layers().size() * kProjs);
    m.stream.synchronize();
  }
  const GemmElem t = gemm_elem(m.dtype);
  auto gemm = [&](int64_t r, int64_t in, int64_t out, bool residual, Proj k, const char* name) {
    if (!m.fp8) {
      RowMajorGemm g = dense_gemms(r, in, out, in, t, false).forward;
      g.accumulate = residual;
      g.name = name;
      return std::make_unique<bert::Gemm>(m.lt, g);
    }
    // out (r, out) in the activations' type = x (r, in) E4M3 times W (out, in) E4M3
    // transposed, both K-major: the only FP8 form Hopper's cuBLASLt takes.
    RowMajorGemm f;
    f.name = fmt::format("{} (FP8)", name);
    f.a = f.b = GemmElem::kE4M3;
    f.c = t;
    // FP32 activations (the exact checks against the reference) sum in full FP32 too.
    f.fast_accum = m.dtype != DType::kF32;
    f.tb = true;
    f.m = round_up(r, 16);
    f.n = out;
    f.k = in;
    f.lda = in;
    f.ldb = in;
    f.ldc = out;
    f.bias = false;
    f.accumulate = residual;
    // The trial run's scale pointers, as aligned as every layer's (bert/fp8.h).
    f.a_scale = &m.in_meta(0, k)->scale_inv;
    f.b_scale = &m.w_meta(0, k)->scale_inv;
    return std::make_unique<bert::Gemm>(m.lt, f);
  };
  auto step = [&](int64_t r) {
    StepGemms g;
    g.qkv = gemm(r, m.c, m.width, false, kQkv, "qkv");
    g.o = gemm(r, m.qd, m.c, true, kO, "attention output");
    g.gu = gemm(r, m.c, 2 * m.inter, false, kGu, "gate and up");
    g.down = gemm(r, m.inter, m.c, true, kDown, "down");
    return g;
  };
  m.prefill = step(p.rows);
  m.decode = step(config_.batch);
  {
    RowMajorGemm g = dense_gemms(config_.batch, m.c, m.vocab, m.c, t, false).forward;
    g.c = GemmElem::kF32;
    g.name = "lm head";
    m.head = std::make_unique<bert::Gemm>(m.lt, g);
  }

  m.weights = DeviceBuffer(p.wl.bytes);
  m.cache = DeviceBuffer(p.cache_bytes);

  m.prefill_splits = 1;
  m.decode_splits = p.decode_splits;
  m.row_gemms_fit = row_gemm_fits(config_.batch, m.c, m.dtype, m.fp8) &&
                    row_gemm_fits(config_.batch, m.qd, m.dtype, m.fp8) &&
                    row_gemm_fits(config_.batch, m.inter, m.dtype, m.fp8);
  m.row_gemms = config_.row_gemms && m.row_gemms_fit;
  m.dependent_launch = major >= 9;
  m.act = DeviceBuffer(p.al.bytes);
  char* base = m.act.as<char>();
  m.x = base + p.x_at;
  m.h = base + p.h_at;
  m.qkv = base + p.qkv_at;
  m.attn = base + p.attn_at;
  m.gu = base + p.gu_at;
  m.a = base + p.a_at;
  m.last = base + p.last_at;
  m.last_norm = base + p.last_norm_at;
  m.logits = reinterpret_cast<float*>(base + p.logits_at);
  m.inv_freq = reinterpret_cast<float*>(base + p.freq_at);
  m.partials = reinterpret_cast<float*>(base + p.part_at);
  m.prompt_ids = reinterpret_cast<int32_t*>(base + p.prompt_at);
  m.next_ids = reinterpret_cast<int32_t*>(base + p.next_at);
  m.pos = reinterpret_cast<int*>(base + p.pos_at);
  m.ws = base + p.ws_at;
  const cudaStream_t st = m.stream.get();
  // The rows past the batch's stay finite (rows_alloc).
  GPUVS_CUDA_CHECK(cudaMemsetAsync(m.act.get(), 0, p.al.bytes, st));
  if (m.fp8) m.x8 = reinterpret_cast<uint8_t*>(base + p.x8_at);

  // Weights: uniform, RMSNorm weights 1 (E4M3 ones from bf16 values, the same ones a
  // bf16 decoder of this seed holds); the rotary frequencies; position 0.
  DeviceBuffer staging(size_t(p.largest_fp8) * m.es);
  for (size_t i = 0; i < p.tensors.size(); ++i) {
    const Plan::Tensor& x = p.tensors[i];
    const bool norm = x.elements == m.c;
    if (norm) {
      fill(m.w(x.at), m.dtype, x.elements, 1.0f, st);
    } else if (x.meta < 0) {
      init_uniform(m.w(x.at), m.dtype, x.elements, config_.init_bound, config_.seed, i, st);
    } else {
      init_uniform(staging.get(), m.dtype, x.elements, config_.init_bound, config_.seed, i, st);
      m.quantize(staging.get(), m.w(x.at), x.elements, m.metas + x.meta);
    }
  }
  std::vector<float> freq;
  for (double f : rope_inv_freq(s))
    freq.push_back(float(f));
  GPUVS_CUDA_CHECK(cudaMemcpyAsync(m.inv_freq, freq.data(), freq.size() * sizeof(float),
                                   cudaMemcpyHostToDevice, st));
  GPUVS_CUDA_CHECK(cudaMemsetAsync(m.pos, 0, sizeof(int), st));
  GPUVS_CUDA_CHECK(cudaMemsetAsync(m.next_ids, 0, config_.batch * sizeof(int32_t), st));
  m.stream.synchronize();
  random_prompt(config_.seed);
}

size_t Decoder::memory_bytes(const DecoderConfig& config, int device) {
  const Plan p = plan_of(config, sm_count(device));
  // The staging of the E4M3 weights is freed at the end of the constructor.
  return p.wl.bytes + p.cache_bytes + p.al.bytes + p.metas_bytes +
         align_up(size_t(p.largest_fp8) * p.es);
}

Decoder::~Decoder() = default;

cudaStream_t Decoder::stream() const {
  return impl_->stream.get();
}

void Decoder::set_prompt(const std::vector<int32_t>& ids) {
  if (ids.size() != size_t(config_.batch) * config_.prompt)
    throw Error(fmt::format("llama: a prompt of {} ids for {} x {}", ids.size(), config_.batch,
                            config_.prompt));
  DeviceScope scope(impl_->device);
  GPUVS_CUDA_CHECK(cudaMemcpyAsync(impl_->prompt_ids, ids.data(), ids.size() * sizeof(int32_t),
                                   cudaMemcpyHostToDevice, stream()));
  impl_->stream.synchronize();
}

void Decoder::random_prompt(uint64_t seed) {
  std::vector<int32_t> ids(size_t(config_.batch) * config_.prompt);
  uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
  for (int32_t& id : ids) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    id = int32_t(x % uint64_t(config_.shape.vocab));
  }
  set_prompt(ids);
}

void Decoder::reset() {
  DeviceScope scope(impl_->device);
  GPUVS_CUDA_CHECK(cudaMemsetAsync(impl_->pos, 0, sizeof(int), stream()));
}

namespace {

// Every layer over `rows` = batch x seq new tokens from ids, then the LM head over the
// last token of each sequence and the greedy choice; the position moves by seq.
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

}  // namespace

void Decoder::prefill() {
  DeviceScope scope(impl_->device);
  Impl& m = *impl_;
  if (m.fp8 && !m.calibrated) {
    // The inputs' scales from this prompt's amaxes (DecoderConfig::fp8_weights).
    bert::Fp8Meta* inputs = m.in_meta(0, 0);
    const int count = int(m.layers().size()) * kProjs;
    m.reset_metas(inputs, size_t(count));
    reset();
    forward(m, config_, m.prefill, m.prompt_ids, config_.prompt, m.prefill_splits);
    bert::update_fp8_metas(inputs, count, m.stream.get());
    m.calibrated = true;
  }
  reset();
  forward(m, config_, m.prefill, m.prompt_ids, config_.prompt, m.prefill_splits);
}

void Decoder::decode_step() {
  DeviceScope scope(impl_->device);
  forward(*impl_, config_, impl_->decode, impl_->next_ids, 1, impl_->decode_splits);
}

void Decoder::enable_profile(bool on) {
  impl_->timer.enable(on);
}

std::vector<std::pair<std::string, double>> Decoder::profile_times() {
  DeviceScope scope(impl_->device);
  return impl_->timer.totals();
}

bool Decoder::use_row_gemms(bool on) {
  impl_->row_gemms = on && impl_->row_gemms_fit;
  return impl_->row_gemms;
}

std::vector<int32_t> Decoder::next_tokens() {
  DeviceScope scope(impl_->device);
  std::vector<int32_t> out(size_t(config_.batch));
  GPUVS_CUDA_CHECK(cudaMemcpyAsync(out.data(), impl_->next_ids, out.size() * sizeof(int32_t),
                                   cudaMemcpyDeviceToHost, stream()));
  impl_->stream.synchronize();
  return out;
}

std::vector<float> Decoder::logits() {
  DeviceScope scope(impl_->device);
  std::vector<float> out(size_t(config_.batch) * config_.shape.vocab);
  GPUVS_CUDA_CHECK(cudaMemcpyAsync(out.data(), impl_->logits, out.size() * sizeof(float),
                                   cudaMemcpyDeviceToHost, stream()));
  impl_->stream.synchronize();
  return out;
}

int Decoder::position() {
  DeviceScope scope(impl_->device);
  int p = 0;
  GPUVS_CUDA_CHECK(cudaMemcpyAsync(&p, impl_->pos, sizeof(int), cudaMemcpyDeviceToHost, stream()));
  impl_->stream.synchronize();
  return p;
}

HostWeights Decoder::download_weights() {
  DeviceScope scope(impl_->device);
  const Impl& m = *impl_;
  impl_->stream.synchronize();
  // The weight metas' dequantisation factors (FP8 weights).
  std::vector<bert::Fp8Meta> metas(m.fp8 ? m.layers().size() * kProjs : 0);
  if (m.fp8)
    GPUVS_CUDA_CHECK(cudaMemcpy(metas.data(), m.metas, metas.size() * sizeof(bert::Fp8Meta),
                                cudaMemcpyDeviceToHost));
  // One tensor as FP32: the storage type read back and widened on the host; E4M3 times
  // its scale.
  auto read = [&](size_t at, int64_t n, int meta = -1) {
    std::vector<float> out(static_cast<size_t>(n));
    if (meta >= 0) {
      std::vector<uint8_t> raw(static_cast<size_t>(n));
      GPUVS_CUDA_CHECK(cudaMemcpy(raw.data(), m.w(at), size_t(n), cudaMemcpyDeviceToHost));
      const float scale = metas[size_t(meta)].scale_inv;
      for (size_t i = 0; i < raw.size(); ++i)
        out[i] = e4m3_to_float(raw[i]) * scale;
      return out;
    }
    if (m.dtype == DType::kF32) {
      GPUVS_CUDA_CHECK(cudaMemcpy(out.data(), m.w(at), size_t(n) * 4, cudaMemcpyDeviceToHost));
      return out;
    }
    std::vector<uint16_t> raw(static_cast<size_t>(n));
    GPUVS_CUDA_CHECK(cudaMemcpy(raw.data(), m.w(at), size_t(n) * 2, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < raw.size(); ++i)
      out[i] = m.dtype == DType::kBF16 ? bfloat16_to_float(raw[i]) : half_to_float(raw[i]);
    return out;
  };
  auto rows_of = [](const std::vector<float>& t, int64_t first, int64_t count, int64_t cols) {
    return std::vector<float>(t.begin() + first * cols, t.begin() + (first + count) * cols);
  };
  auto meta_of = [&](size_t l, Proj k) { return m.fp8 ? int(l * kProjs + k) : -1; };
  HostWeights h;
  h.embed = read(m.plan.embed_at, m.vocab * m.c);
  for (size_t li = 0; li < m.layers().size(); ++li) {
    const LayerOffsets& o = m.layers()[li];
    HostWeights::Layer l;
    l.attn_norm = read(o.attn_norm, m.c);
    const std::vector<float> qkv = read(o.wqkv, m.width * m.c, meta_of(li, kQkv));
    l.wq = rows_of(qkv, 0, m.qd, m.c);
    l.wk = rows_of(qkv, m.qd, m.kvd, m.c);
    l.wv = rows_of(qkv, m.qd + m.kvd, m.kvd, m.c);
    l.wo = read(o.wo, m.c * m.qd, meta_of(li, kO));
    l.mlp_norm = read(o.mlp_norm, m.c);
    const std::vector<float> gu = read(o.wgu, 2 * m.inter * m.c, meta_of(li, kGu));
    l.gate = rows_of(gu, 0, m.inter, m.c);
    l.up = rows_of(gu, m.inter, m.inter, m.c);
    l.down = read(o.wdown, m.c * m.inter, meta_of(li, kDown));
    h.layers.push_back(std::move(l));
  }
  h.final_norm = read(m.plan.final_norm_at, m.c);
  if (!config_.shape.tied_embeddings) h.lm_head = read(m.plan.head_at, m.vocab * m.c);
  return h;
}

void Decoder::set_weights(const HostWeights& w) {
  DeviceScope scope(impl_->device);
  Impl& m = *impl_;
  const Shape& s = config_.shape;
  if (w.layers.size() != size_t(s.layers))
    throw Error(
        fmt::format("llama: weights of {} layers for {}'s {}", w.layers.size(), s.name, s.layers));
  if (w.lm_head.empty() != s.tied_embeddings)
    throw Error(fmt::format("llama: {} has {} embeddings, the weights {}", s.name,
                            s.tied_embeddings ? "tied" : "untied",
                            w.lm_head.empty() ? "no LM head" : "an LM head of their own"));
  // Each tensor through one FP32 staging buffer as large as the largest part; an E4M3
  // tensor's parts gathered in the storage type first, then quantised whole.
  int64_t largest = m.vocab * m.c;
  largest = std::max({largest, m.width * m.c, 2 * m.inter * m.c});
  DeviceBuffer staging(size_t(largest) * sizeof(float));
  DeviceBuffer whole(m.fp8 ? size_t(m.plan.largest_fp8) * m.es : 0);
  const cudaStream_t st = m.stream.get();
  auto put = [&](const std::vector<float>& t, int64_t n, void* dst, const std::string& name) {
    if (t.size() != size_t(n))
      throw Error(
          fmt::format("llama: weight {} has {} values, {} expects {}", name, t.size(), s.name, n));
    GPUVS_CUDA_CHECK(cudaMemcpyAsync(staging.as<float>(), t.data(), t.size() * sizeof(float),
                                     cudaMemcpyHostToDevice, st));
    bert::cast_from_float(staging.as<float>(), dst, n, m.dtype, st);
    m.stream.synchronize();  // the staging buffer is reused by the next tensor
  };
  // Where a projection's parts go: the weights themselves, or `whole` (E4M3).
  auto target = [&](size_t at) { return m.fp8 ? whole.as<char>() : m.w(at); };
  auto finish = [&](size_t at, int64_t n, size_t l, Proj k) {
    if (!m.fp8) return;
    m.quantize(whole.get(), m.w(at), n, m.w_meta(l, k));
    m.stream.synchronize();  // `whole` is reused by the next projection
  };
  put(w.embed, m.vocab * m.c, m.w(m.plan.embed_at), "embed");
  for (size_t l = 0; l < m.layers().size(); ++l) {
    const LayerOffsets& o = m.layers()[l];
    const HostWeights::Layer& x = w.layers[l];
    const std::string at = fmt::format("layers.{}.", l);
    put(x.attn_norm, m.c, m.w(o.attn_norm), at + "attn_norm");
    // The fused projections: q, k, v rows one after another, then gate and up.
    char* qkv = target(o.wqkv);
    put(x.wq, m.qd * m.c, qkv, at + "wq");
    put(x.wk, m.kvd * m.c, qkv + size_t(m.qd * m.c) * m.es, at + "wk");
    put(x.wv, m.kvd * m.c, qkv + size_t((m.qd + m.kvd) * m.c) * m.es, at + "wv");
    finish(o.wqkv, m.width * m.c, l, kQkv);
    put(x.wo, m.c * m.qd, target(o.wo), at + "wo");
    finish(o.wo, m.c * m.qd, l, kO);
    put(x.mlp_norm, m.c, m.w(o.mlp_norm), at + "mlp_norm");
    char* gu = target(o.wgu);
    put(x.gate, m.inter * m.c, gu, at + "gate");
    put(x.up, m.inter * m.c, gu + size_t(m.inter * m.c) * m.es, at + "up");
    finish(o.wgu, 2 * m.inter * m.c, l, kGu);
    put(x.down, m.c * m.inter, target(o.wdown), at + "down");
    finish(o.wdown, m.c * m.inter, l, kDown);
  }
  put(w.final_norm, m.c, m.w(m.plan.final_norm_at), "final_norm");
  if (!s.tied_embeddings) put(w.lm_head, m.vocab * m.c, m.w(m.plan.head_at), "lm_head");
  m.calibrated = false;  // new weights, new inputs: the next prefill calibrates again
}

int64_t Decoder::parameter_count() const {
  return llama::parameter_count(config_.shape);
}

double Decoder::weight_bytes() const {
  const Shape& s = config_.shape;
  const double es = double(dtype_size(config_.dtype));
  const double all = double(decode_weight_count(s)) * es;
  if (!config_.fp8_weights) return all;
  // The projections at one byte a weight instead.
  const double c = s.hidden, qd = double(s.heads) * s.head_dim(), kv = s.kv_dim();
  const double projections = s.layers * ((qd + 2 * kv) * c + c * qd + 3.0 * s.intermediate * c);
  return all - projections * (es - 1.0);
}

std::vector<float> Decoder::fp8_input_scales() {
  DeviceScope scope(impl_->device);
  const Impl& m = *impl_;
  if (!m.fp8) return {};
  m.stream.synchronize();
  std::vector<bert::Fp8Meta> metas(m.layers().size() * kProjs);
  GPUVS_CUDA_CHECK(cudaMemcpy(metas.data(), m.in_meta(0, 0), metas.size() * sizeof(bert::Fp8Meta),
                              cudaMemcpyDeviceToHost));
  std::vector<float> out;
  for (const bert::Fp8Meta& x : metas)
    out.push_back(x.scale);
  return out;
}

double Decoder::cache_bytes_per_token() const {
  return double(
      kv_bytes_per_token(config_.shape, config_.fp8_cache ? 1 : int(dtype_size(config_.dtype))));
}

double Decoder::decode_bytes(int context) const {
  return weight_bytes() + double(config_.batch) * context * cache_bytes_per_token();
}

double Decoder::prefill_flops() const {
  const Shape& s = config_.shape;
  const double p = config_.prompt;
  // Every weight but the embedding table per token, the LM head on the last token
  // only; causal attention: scores and context, 2 x 2 x D per (query, key) pair.
  const double per_token =
      2.0 * double(parameter_count() - int64_t(s.vocab) * s.hidden * (s.tied_embeddings ? 1 : 2));
  const double head = 2.0 * double(s.vocab) * s.hidden;
  const double attention = 4.0 * s.layers * s.heads * s.head_dim() * p * (p + 1) / 2;
  return config_.batch * (per_token * p + head + attention);
}

double Decoder::decode_flops(int context) const {
  const Shape& s = config_.shape;
  const double per_token =
      2.0 * double(parameter_count() - int64_t(s.vocab) * s.hidden * (s.tied_embeddings ? 1 : 2));
  const double head = 2.0 * double(s.vocab) * s.hidden;
  const double attention = 4.0 * s.layers * s.heads * s.head_dim() * double(context);
  return config_.batch * (per_token + head + attention);
}

}  // namespace gpuvs::models::llama
