// The Llama decoder (decoder.h): weights, KV cache and activations in a few
// buffers, BERT's cuBLASLt GEMM wrapper for every projection, the kernels of
// kernels.h for the rest. The plan of the buffers is decoder_plan.cpp, a forward pass
// decoder_forward.cpp (decoder_impl.h).
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
#include "models/llama/decoder_impl.h"
#include "models/llama/kernels.h"
#include "models/llama/row_gemm.h"
#include "models/tensor_file.h"

namespace gpuvs::models::llama {

using namespace decoder_detail;

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
