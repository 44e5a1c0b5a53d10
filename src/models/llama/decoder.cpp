// The Llama decoder (decoder.h): weights, KV cache and activations in a few
// buffers, BERT's cuBLASLt GEMM wrapper for every projection, the kernels of
// kernels.h for the rest.
#include "models/llama/decoder.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "core/error.h"
#include "gpu/check.h"
#include "gpu/cublaslt.h"
#include "gpu/device.h"
#include "gpu/gemm_spec.h"
#include "measure/region_timer.h"
#include "models/bert/gemm.h"
#include "models/bert/kernels.h"
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

// The GEMMs of one row count.
struct StepGemms {
  std::unique_ptr<bert::Gemm> qkv, o, gu, down;
};

}  // namespace

struct Decoder::Impl {
  int device = 0;
  Stream stream;
  LtHandle lt;
  DType dtype = DType::kBF16;
  size_t es = 2;  // bytes per element
  int64_t c = 0, qd = 0, kvd = 0, inter = 0, vocab = 0, width = 0;

  // Weights.
  DeviceBuffer weights;
  std::vector<LayerOffsets> layers;
  size_t embed_at = 0, final_norm_at = 0, head_at = 0;
  std::vector<std::pair<size_t, int64_t>> tensors;  // (offset, elements), init order
  // Caches: K and V per layer, (batch, max_context, KV) each.
  DeviceBuffer cache;
  size_t cache_layer_bytes = 0;
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

  StepGemms prefill, decode;
  std::unique_ptr<bert::Gemm> head;

  char* w(size_t at) const { return weights.as<char>() + at; }
  void* k_cache(size_t layer) const { return cache.as<char>() + 2 * layer * cache_layer_bytes; }
  void* v_cache(size_t layer) const {
    return cache.as<char>() + (2 * layer + 1) * cache_layer_bytes;
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
  DeviceScope scope(device);
  Impl& m = *impl_;
  m.device = device;
  m.dtype = config_.dtype;
  m.es = dtype_size(m.dtype);
  m.c = s.hidden;
  m.qd = int64_t(s.heads) * s.head_dim();
  m.kvd = s.kv_dim();
  m.inter = s.intermediate;
  m.vocab = s.vocab;
  m.width = m.qd + 2 * m.kvd;

  Layout wl;
  auto tensor = [&](int64_t elements) {
    const size_t at = wl.add(size_t(elements), m.es);
    m.tensors.emplace_back(at, elements);
    return at;
  };
  m.embed_at = tensor(m.vocab * m.c);
  for (int l = 0; l < s.layers; ++l) {
    LayerOffsets o{};
    o.attn_norm = tensor(m.c);
    o.wqkv = tensor(m.width * m.c);
    o.wo = tensor(m.c * m.qd);
    o.mlp_norm = tensor(m.c);
    o.wgu = tensor(2 * m.inter * m.c);
    o.wdown = tensor(m.c * m.inter);
    m.layers.push_back(o);
  }
  m.final_norm_at = tensor(m.c);
  m.head_at = s.tied_embeddings ? m.embed_at : tensor(m.vocab * m.c);
  m.weights = DeviceBuffer(wl.bytes);

  m.cache_layer_bytes = align_up(size_t(config_.batch) * config_.max_context * m.kvd * m.es);
  m.cache = DeviceBuffer(2 * size_t(s.layers) * m.cache_layer_bytes);

  int sms = 0;
  GPUVS_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const int64_t rows = int64_t(config_.batch) * config_.prompt;
  m.prefill_splits = 1;
  m.decode_splits = attention_splits(config_.batch, s.heads, config_.max_context, sms);
  m.row_gemms_fit = row_gemm_fits(config_.batch, m.c, m.dtype) &&
                    row_gemm_fits(config_.batch, m.qd, m.dtype) &&
                    row_gemm_fits(config_.batch, m.inter, m.dtype);
  m.row_gemms = config_.row_gemms && m.row_gemms_fit;
  int major = 0;
  GPUVS_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  m.dependent_launch = major >= 9;
  Layout al;
  const size_t x_at = al.add(size_t(rows * m.c), m.es);
  const size_t h_at = al.add(size_t(rows * m.c), m.es);
  const size_t qkv_at = al.add(size_t(rows * m.width), m.es);
  const size_t attn_at = al.add(size_t(rows * m.qd), m.es);
  const size_t gu_at = al.add(size_t(rows * 2 * m.inter), m.es);
  const size_t a_at = al.add(size_t(rows * m.inter), m.es);
  const size_t last_at = al.add(size_t(config_.batch * m.c), m.es);
  const size_t last_norm_at = al.add(size_t(config_.batch * m.c), m.es);
  const size_t logits_at = al.add(size_t(config_.batch * m.vocab), sizeof(float));
  const size_t freq_at = al.add(size_t(s.head_dim() / 2), sizeof(float));
  const size_t part_at = al.add(
      size_t(attention_partial_floats(config_.batch, s.heads, s.head_dim(), m.decode_splits)),
      sizeof(float));
  const size_t prompt_at = al.add(size_t(rows), sizeof(int32_t));
  const size_t next_at = al.add(size_t(config_.batch), sizeof(int32_t));
  const size_t pos_at = al.add(1, sizeof(int));
  const size_t ws_at = al.add(bert::kGemmWorkspaceBytes, 1);
  m.act = DeviceBuffer(al.bytes);
  char* base = m.act.as<char>();
  m.x = base + x_at;
  m.h = base + h_at;
  m.qkv = base + qkv_at;
  m.attn = base + attn_at;
  m.gu = base + gu_at;
  m.a = base + a_at;
  m.last = base + last_at;
  m.last_norm = base + last_norm_at;
  m.logits = reinterpret_cast<float*>(base + logits_at);
  m.inv_freq = reinterpret_cast<float*>(base + freq_at);
  m.partials = reinterpret_cast<float*>(base + part_at);
  m.prompt_ids = reinterpret_cast<int32_t*>(base + prompt_at);
  m.next_ids = reinterpret_cast<int32_t*>(base + next_at);
  m.pos = reinterpret_cast<int*>(base + pos_at);
  m.ws = base + ws_at;

  const GemmElem t = gemm_elem(m.dtype);
  auto gemm = [&](int64_t r, int64_t in, int64_t out, bool residual, const char* name) {
    RowMajorGemm g = dense_gemms(r, in, out, in, t, false).forward;
    g.accumulate = residual;
    g.name = name;
    return std::make_unique<bert::Gemm>(m.lt, g);
  };
  auto step = [&](int64_t r) {
    StepGemms g;
    g.qkv = gemm(r, m.c, m.width, false, "qkv");
    g.o = gemm(r, m.qd, m.c, true, "attention output");
    g.gu = gemm(r, m.c, 2 * m.inter, false, "gate and up");
    g.down = gemm(r, m.inter, m.c, true, "down");
    return g;
  };
  m.prefill = step(rows);
  m.decode = step(config_.batch);
  {
    RowMajorGemm g = dense_gemms(config_.batch, m.c, m.vocab, m.c, t, false).forward;
    g.c = GemmElem::kF32;
    g.name = "lm head";
    m.head = std::make_unique<bert::Gemm>(m.lt, g);
  }

  // Weights: uniform, RMSNorm weights 1; the rotary frequencies; position 0.
  const cudaStream_t st = m.stream.get();
  for (size_t i = 0; i < m.tensors.size(); ++i) {
    const auto [at, n] = m.tensors[i];
    const bool norm = n == m.c;
    if (norm)
      fill(m.w(at), m.dtype, n, 1.0f, st);
    else
      init_uniform(m.w(at), m.dtype, n, config_.init_bound, config_.seed, i, st);
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
  auto project = [&](RowInput in, const void* x, const void* norm, const void* w, int64_t k,
                     int64_t n, bool residual, void* out) {
    RowGemmArgs a;
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
    row_gemm(a, m.dependent_launch, st);
  };
  RegionTimer& t = m.timer;
  t.mark("embed", st);
  embed(ids, m.w(m.embed_at), m.x, rows, int(m.c), m.dtype, st, dep);
  for (size_t l = 0; l < m.layers.size(); ++l) {
    const LayerOffsets& o = m.layers[l];
    t.mark("qkv", st);
    if (few) {
      project(RowInput::kRmsNorm, m.x, m.w(o.attn_norm), m.w(o.wqkv), m.c, m.width, false, m.qkv);
    } else {
      rms_norm(m.x, m.w(o.attn_norm), m.h, rows, int(m.c), eps, m.dtype, st);
      g.qkv->run(m.h, m.w(o.wqkv), m.qkv, 1.0f, 0.0f, nullptr, nullptr, m.ws, st);
    }
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
    r.dependent_launch = dep;
    rope_and_cache(r, st);
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
    at.out = m.attn;
    at.splits = splits;
    at.partials = m.partials;
    at.dependent_launch = dep;
    attention(at, st);
    if (few) {
      t.mark("attention output", st);
      project(RowInput::kPlain, m.attn, nullptr, m.w(o.wo), m.qd, m.c, true, m.x);
      t.mark("gate and up", st);
      project(RowInput::kRmsNorm, m.x, m.w(o.mlp_norm), m.w(o.wgu), m.c, 2 * m.inter, false, m.gu);
      t.mark("down", st);
      project(RowInput::kSwiGLU, m.gu, nullptr, m.w(o.wdown), m.inter, m.c, true, m.x);
      continue;
    }
    t.mark("attention output", st);
    g.o->run(m.attn, m.w(o.wo), m.x, 1.0f, 1.0f, m.x, nullptr, m.ws, st);
    t.mark("gate and up", st);
    rms_norm(m.x, m.w(o.mlp_norm), m.h, rows, int(m.c), eps, m.dtype, st);
    g.gu->run(m.h, m.w(o.wgu), m.gu, 1.0f, 0.0f, nullptr, nullptr, m.ws, st);
    t.mark("down", st);
    swiglu(m.gu, m.a, rows, int(m.inter), m.dtype, st);
    g.down->run(m.a, m.w(o.wdown), m.x, 1.0f, 1.0f, m.x, nullptr, m.ws, st);
  }
  t.mark("lm head", st);
  if (few) {
    project(RowInput::kRmsNorm, m.x, m.w(m.final_norm_at), m.w(m.head_at), m.c, m.vocab, false,
            m.logits);
  } else {
    const void* last = m.x;
    if (seq > 1) {
      gather_last_rows(m.x, m.last, cfg.batch, seq, int(m.c), m.dtype, st);
      last = m.last;
    }
    rms_norm(last, m.w(m.final_norm_at), m.last_norm, cfg.batch, int(m.c), eps, m.dtype, st);
    m.head->run(m.last_norm, m.w(m.head_at), m.logits, 1.0f, 0.0f, nullptr, nullptr, m.ws, st);
  }
  argmax_rows(m.logits, m.next_ids, cfg.batch, int(m.vocab), st, dep);
  advance_position(m.pos, seq, st, dep);
  t.stop(st);
}

}  // namespace

void Decoder::prefill() {
  DeviceScope scope(impl_->device);
  reset();
  forward(*impl_, config_, impl_->prefill, impl_->prompt_ids, config_.prompt,
          impl_->prefill_splits);
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
  // One tensor as FP32: the storage type read back and widened on the host.
  auto read = [&](size_t at, int64_t n) {
    std::vector<float> out(static_cast<size_t>(n));
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
  HostWeights h;
  h.embed = read(m.embed_at, m.vocab * m.c);
  for (const LayerOffsets& o : m.layers) {
    HostWeights::Layer l;
    l.attn_norm = read(o.attn_norm, m.c);
    const std::vector<float> qkv = read(o.wqkv, m.width * m.c);
    l.wq = rows_of(qkv, 0, m.qd, m.c);
    l.wk = rows_of(qkv, m.qd, m.kvd, m.c);
    l.wv = rows_of(qkv, m.qd + m.kvd, m.kvd, m.c);
    l.wo = read(o.wo, m.c * m.qd);
    l.mlp_norm = read(o.mlp_norm, m.c);
    const std::vector<float> gu = read(o.wgu, 2 * m.inter * m.c);
    l.gate = rows_of(gu, 0, m.inter, m.c);
    l.up = rows_of(gu, m.inter, m.inter, m.c);
    l.down = read(o.wdown, m.c * m.inter);
    h.layers.push_back(std::move(l));
  }
  h.final_norm = read(m.final_norm_at, m.c);
  if (!config_.shape.tied_embeddings) h.lm_head = read(m.head_at, m.vocab * m.c);
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
  // Each tensor through one FP32 staging buffer as large as the largest part.
  int64_t largest = m.vocab * m.c;
  largest = std::max({largest, m.width * m.c, 2 * m.inter * m.c});
  DeviceBuffer staging(size_t(largest) * sizeof(float));
  const cudaStream_t st = m.stream.get();
  auto put = [&](const std::vector<float>& t, int64_t n, size_t at, const std::string& name) {
    if (t.size() != size_t(n))
      throw Error(
          fmt::format("llama: weight {} has {} values, {} expects {}", name, t.size(), s.name, n));
    GPUVS_CUDA_CHECK(cudaMemcpyAsync(staging.as<float>(), t.data(), t.size() * sizeof(float),
                                     cudaMemcpyHostToDevice, st));
    bert::cast_from_float(staging.as<float>(), m.w(at), n, m.dtype, st);
    m.stream.synchronize();  // the staging buffer is reused by the next tensor
  };
  put(w.embed, m.vocab * m.c, m.embed_at, "embed");
  for (size_t l = 0; l < m.layers.size(); ++l) {
    const LayerOffsets& o = m.layers[l];
    const HostWeights::Layer& x = w.layers[l];
    const std::string at = fmt::format("layers.{}.", l);
    put(x.attn_norm, m.c, o.attn_norm, at + "attn_norm");
    // The fused projections: q, k, v rows one after another, then gate and up.
    put(x.wq, m.qd * m.c, o.wqkv, at + "wq");
    put(x.wk, m.kvd * m.c, o.wqkv + size_t(m.qd * m.c) * m.es, at + "wk");
    put(x.wv, m.kvd * m.c, o.wqkv + size_t((m.qd + m.kvd) * m.c) * m.es, at + "wv");
    put(x.wo, m.c * m.qd, o.wo, at + "wo");
    put(x.mlp_norm, m.c, o.mlp_norm, at + "mlp_norm");
    put(x.gate, m.inter * m.c, o.wgu, at + "gate");
    put(x.up, m.inter * m.c, o.wgu + size_t(m.inter * m.c) * m.es, at + "up");
    put(x.down, m.c * m.inter, o.wdown, at + "down");
  }
  put(w.final_norm, m.c, m.final_norm_at, "final_norm");
  if (!s.tied_embeddings) put(w.lm_head, m.vocab * m.c, m.head_at, "lm_head");
}

int64_t Decoder::parameter_count() const {
  return llama::parameter_count(config_.shape);
}

double Decoder::weight_bytes() const {
  return double(decode_weight_count(config_.shape)) * double(dtype_size(config_.dtype));
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
