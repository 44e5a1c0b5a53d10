// BERT-large construction: layers, memory, initial state, and the tensors exchanged
// with PyTorch. The steps are in bert_steps.cpp.
#include "models/bert/bert.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <string>

#include "core/error.h"
#include "gpu/check.h"
#include "models/layers/gemm_dtype.h"

namespace gpuvs::models {

namespace bert {

namespace {

DType storage_type(Precision p) {
  switch (p) {
    case Precision::kFp16:
      return DType::kF16;
    case Precision::kBf16:
    case Precision::kFp8:  // FP8 GEMMs, bf16 everywhere else
      return DType::kBF16;
    default:
      return DType::kF32;
  }
}

const ModelConfig& checked(const ModelConfig& c, int device) {
  if (c.batch < 1) throw UsageError(fmt::format("batch must be at least 1, not {}", c.batch));
  if (c.seq < 32 || c.seq > kMaxPositions || c.seq % 32 != 0)
    throw UsageError(fmt::format(
        "bert-large: sequence length {} is not supported (a multiple of 32 up to {}: 128 and "
        "512 are the benchmark's)",
        c.seq, kMaxPositions));
  if (c.attention == Attention::kFused &&
      !flash_attention_supported(storage_type(c.precision), c.seq, kHeadDim)) {
    std::string why;
    if (storage_type(c.precision) == DType::kF32)
      why = fmt::format("{} keeps activations in FP32 and the fused kernels are bf16/fp16 only",
                        to_string(c.precision));
    else
      why = fmt::format("sequence length {} is not a multiple of 64 (the kernels' tile)", c.seq);
    throw UsageError(fmt::format(
        "--attention fused: {}; use --attention unfused (or bf16, fp16 or fp8 at a sequence "
        "length that is a multiple of 64)",
        why));
  }
  GPUVS_CUDA_CHECK(cudaSetDevice(device));
  if (c.precision == Precision::kFp8) {
    int major = 0, minor = 0;
    GPUVS_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    GPUVS_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
    if (const auto why = fp8_refusal(major, minor)) throw UsageError(*why);
  }
  return c;
}

std::vector<float> download(const void* src, size_t count, cudaStream_t s) {
  std::vector<float> v(count);
  GPUVS_CUDA_CHECK(cudaMemcpyAsync(v.data(), src, count * 4, cudaMemcpyDeviceToHost, s));
  GPUVS_CUDA_CHECK(cudaStreamSynchronize(s));
  return v;
}

// The FP8 weights' offsets in the flat arrays, in fp8_lin_'s order: qkv, attention
// output, ffn1, ffn2.
std::array<int64_t, 4> fp8_weight_offsets(const Offsets& o, int l) {
  return {o.layers[l].qkv_w, o.layers[l].ao_w, o.layers[l].ff1_w, o.layers[l].ff2_w};
}

}  // namespace

BertLarge::BertLarge(const ModelConfig& config, int device)
    : config_(checked(config, device)),
      dtype_(storage_type(config.precision)),
      train_(config.mode == Mode::kTrain),
      b_(config.batch),
      t_(config.seq),
      n_(int64_t(config.batch) * config.seq) {
  fp8_ = config_.precision == Precision::kFp8;
  flash_ = config_.attention == Attention::kFused;  // checked() refused what it cannot run
  if (flash_) flash_attention_init();
  build();
  allocate();
  upload_initial_state();
  if (fp8_) calibrate_fp8();
}

BertLarge::~BertLarge() = default;

void BertLarge::build() {
  const bool tf32 = config_.precision == Precision::kTf32;
  const auto linear = [&](int64_t rows, int64_t in, int64_t out, int64_t ld_x) {
    DenseShape p;
    p.rows = rows;
    p.in = in;
    p.out = out;
    p.ld_x = ld_x;
    p.dtype = dtype_;
    p.tf32 = tf32;
    p.train = train_;
    return std::make_unique<DenseLayer>(lt_, p);
  };
  qkv_ = linear(n_, kHidden, 3 * kHidden, 0);
  attn_out_ = linear(n_, kHidden, kHidden, 0);
  ffn1_ = linear(n_, kHidden, kFfn, 0);
  ffn2_ = linear(n_, kFfn, kHidden, 0);
  transform_ = linear(n_, kHidden, kHidden, 0);
  decoder_ = linear(n_, kHidden, kVocabPadded, 0);
  pooler_ = linear(b_, kHidden, kHidden, int64_t(t_) * kHidden);  // the [CLS] rows
  if (train_) {
    // 15 % of the word positions are masked (generate_input): room for the mean plus
    // 5 standard deviations and 64 rows, a multiple of 64.
    const double mean = 0.15 * double(n_), sd = std::sqrt(0.15 * 0.85 * double(n_));
    mlm_cap_ = std::min<int64_t>(n_, (int64_t(mean + 5.0 * sd) + 64 + 63) / 64 * 64);
    decoder_masked_ = linear(mlm_cap_, kHidden, kVocabPadded, 0);
  }
  nsp_ = linear(b_, kHidden, kNspPadded, 0);

  const int64_t t = t_, d = kHeadDim;
  RowMajorGemm g;
  g.batch = b_ * kHeads;
  g.a = g.b = g.c = gemm_elem(dtype_);
  g.tf32 = tf32;
  RowMajorGemm sc = g;  // (T, T) = (T, D) (T, D)^T
  sc.tb = true;
  sc.m = t;
  sc.n = t;
  sc.k = d;
  sc.lda = d;
  sc.ldb = d;
  sc.ldc = t;
  sc.stride_a = t * d;
  sc.stride_b = t * d;
  sc.stride_c = t * t;
  scores_ = std::make_unique<Gemm>(lt_, sc);
  RowMajorGemm cx = g;  // (T, D) = (T, T) (T, D)
  cx.m = t;
  cx.n = d;
  cx.k = t;
  cx.lda = t;
  cx.ldb = d;
  cx.ldc = d;
  cx.stride_a = t * t;
  cx.stride_b = t * d;
  cx.stride_c = t * d;
  context_ = std::make_unique<Gemm>(lt_, cx);
  if (train_) {
    RowMajorGemm tr = cx;  // (T, D) = (T, T)^T (T, D)
    tr.ta = true;
    transposed_ = std::make_unique<Gemm>(lt_, tr);
  }
  if (fp8_) {
    constexpr int kPer = Fp8Linear::kMetasPerLayer;
    fp8_metas_ = fp8_linear_metas(4 * kLayers);
    const int64_t shapes[kEncoderDenseCount][2] = {
        {kHidden, 3 * kHidden}, {kHidden, kHidden}, {kHidden, kFfn}, {kFfn, kHidden}};
    const char* names[kEncoderDenseCount] = {"qkv", "attention output", "ffn1", "ffn2"};
    for (int w = 0; w < kEncoderDenseCount; ++w)
      fp8_lin_[w] =
          std::make_unique<Fp8Linear>(lt_, n_, shapes[w][0], shapes[w][1], kLayers, train_,
                                      fp8_metas_.as<Fp8Meta>() + w * kLayers * kPer, names[w]);
  }

  double fwd =
      kLayers * (qkv_->forward_flops() + attn_out_->forward_flops() + ffn1_->forward_flops() +
                 ffn2_->forward_flops() + scores_->flops() + context_->flops());
  // Training counts the decoder GEMMs on the masked rows it runs (mlm_cap_).
  fwd += transform_->forward_flops() +
         (train_ ? decoder_masked_->forward_flops() : decoder_->forward_flops()) +
         pooler_->forward_flops() + nsp_->forward_flops();
  // Backward: two GEMMs of the forward's size per GEMM (data and weight gradients;
  // dP and dV, dQ and dK in attention).
  flops_ = train_ ? 3.0 * fwd : fwd;
}

void BertLarge::allocate() {
  const size_t e = es();
  const size_t nc = size_t(n_) * kHidden * e, nf = size_t(n_) * kFfn * e;
  const size_t tt = size_t(b_) * kHeads * t_ * t_ * e;
  const size_t stats = size_t(n_) * 2 * 4;
  const int64_t total = layout_.total();

  master_ = DeviceBuffer(size_t(total) * 4);
  if (fp8_) {
    std::vector<Fp8ScaleJob> jobs;
    for (int l = 0; l < kLayers; ++l) {
      const auto offs = fp8_weight_offsets(layout_.offsets(), l);
      for (int w = 0; w < kEncoderDenseCount; ++w)
        if (const auto job = fp8_lin_[w]->weight_scale_job(l, master(offs[w])))
          jobs.push_back(*job);
    }
    fp8_weight_scales_ = Fp8ScaleBatch(jobs);
  }
  if (dtype_ != DType::kF32) model_copy_ = DeviceBuffer(size_t(total) * e);
  scaler_ = DeviceBuffer(sizeof(LossScaleState));
  rng_ = DeviceBuffer(sizeof(uint64_t));
  ids_ = DeviceBuffer(size_t(n_) * 4);
  types_ = DeviceBuffer(size_t(n_) * 4);
  mask_ = DeviceBuffer(size_t(n_) * 4);
  labels_ = DeviceBuffer(size_t(n_) * 4);
  nsp_labels_ = DeviceBuffer(size_t(b_) * 4);

  emb_out_ = DeviceBuffer(nc);
  layers_.resize(train_ ? kLayers : 2);
  for (LayerActs& L : layers_) {
    L.q = DeviceBuffer(nc);
    L.k = DeviceBuffer(nc);
    L.v = DeviceBuffer(nc);
    if (!flash_) L.probs = DeviceBuffer(tt);
    L.ctx = DeviceBuffer(nc);
    L.a = DeviceBuffer(nc);
    L.h = DeviceBuffer(nf);
    L.out = DeviceBuffer(nc);
    if (train_) {
      if (!flash_) L.probs_drop = DeviceBuffer(tt);
      L.z1 = DeviceBuffer(nc);
      L.stats1 = DeviceBuffer(stats);
      L.g = DeviceBuffer(nf);
      L.z2 = DeviceBuffer(nc);
      L.stats2 = DeviceBuffer(stats);
    }
  }
  qkv_tok_ = DeviceBuffer(3 * nc);
  ctx_heads_ = DeviceBuffer(nc);
  dense_out_ = DeviceBuffer(nc);
  tr_h_ = DeviceBuffer(nc);
  tr_y_ = DeviceBuffer(nc);
  logits_ = DeviceBuffer(size_t(n_) * kVocabPadded * e);
  pool_pre_ = DeviceBuffer(size_t(b_) * kHidden * e);
  pooled_ = DeviceBuffer(size_t(b_) * kHidden * e);
  nsp_logits_ = DeviceBuffer(size_t(b_) * kNspPadded * e);
  row_loss_ = DeviceBuffer(size_t(n_ + b_) * 4);
  counts_ = DeviceBuffer(2 * 4);
  loss_ = DeviceBuffer(3 * 4);
  workspace_ = DeviceBuffer(kGemmWorkspaceBytes);
  if (!train_) return;

  grads_ = DeviceBuffer(size_t(total) * 4);
  adam_m_ = DeviceBuffer(size_t(total) * 4);
  adam_v_ = DeviceBuffer(size_t(total) * 4);
  emb_z_ = DeviceBuffer(nc);
  emb_stats_ = DeviceBuffer(stats);
  tr_g_ = DeviceBuffer(nc);
  tr_stats_ = DeviceBuffer(stats);
  dlogits_ = DeviceBuffer(size_t(n_) * kVocabPadded * e);
  dnsp_ = DeviceBuffer(size_t(b_) * kNspPadded * e);
  dpool_ = DeviceBuffer(size_t(b_) * kHidden * e);
  for (DeviceBuffer* b : {&d_out_, &d_res_, &d_drop_, &d_ctx_, &d_ctx_heads_, &d_q_, &d_k_, &d_v_})
    *b = DeviceBuffer(nc);
  d_qkv_ = DeviceBuffer(3 * nc);
  d_h_ = DeviceBuffer(nf);
  if (flash_) {
    lse_ = DeviceBuffer(size_t(kLayers) * b_ * kHeads * t_ * 4);
    delta_ = DeviceBuffer(size_t(b_) * kHeads * t_ * 4);
  } else {
    d_probs_ = DeviceBuffer(tt);
  }
  mlm_idx_ = DeviceBuffer(size_t(mlm_cap_) * 4);
  mlm_inv_ = DeviceBuffer(size_t(n_) * 4);
  mlm_labels_ = DeviceBuffer(size_t(mlm_cap_) * 4);
  mlm_x_ = DeviceBuffer(size_t(mlm_cap_) * kHidden * e);
  mlm_dx_ = DeviceBuffer(size_t(mlm_cap_) * kHidden * e);
  const int64_t partials = std::max({
      colsum_partial_floats(n_, kVocabPadded, 1),
      colsum_partial_floats(n_, kFfn, 1),
      fp8_colsum_partial_floats(n_, kFfn),
      colsum_partial_floats(n_, 3 * kHidden, 1),
      colsum_partial_floats(n_, kHidden, 2),
      colsum_partial_floats(b_, int64_t(t_) * kHidden, 1),
      colsum_partial_floats(b_, kHidden, 1),
      colsum_partial_floats(b_, kNspPadded, 1),
      ln_partial_floats(n_, kHidden),
  });
  partials_ = DeviceBuffer(size_t(partials) * 4);
}

void BertLarge::upload_initial_state() {
  cudaStream_t s = stream_.get();
  // transformers' BertPreTrainedModel._init_weights: dense and embedding weights
  // N(0, 0.02), biases 0, LayerNorm weight 1 and bias 0; the padding token's (id 0)
  // embedding row 0. Padded vocabulary rows stay 0.
  GPUVS_CUDA_CHECK(cudaMemsetAsync(master_.get(), 0, master_.bytes(), s));
  uint64_t salt = 0;
  for (const ParamEntry& e : layout_.entries()) {
    int64_t numel = 1;
    for (int64_t d : e.shape)
      numel *= d;
    ++salt;
    if (e.init == ParamEntry::Init::kNormal)
      init_normal(master(e.offset), numel, kInitStd, config_.seed, salt, s);
    else if (e.init == ParamEntry::Init::kOne)
      fill(master(e.offset), numel, 1.0f, s);
  }
  fill(master(layout_.offsets().word), kHidden, 0.0f, s);  // padding_idx 0
  if (dtype_ != DType::kF32)
    cast_from_float(master_.as<float>(), model_copy_.get(), layout_.total(), dtype_, s);
  if (fp8_) cast_fp8_weights();
  const LossScaleState scaler{config_.precision == Precision::kFp16 ? kInitialLossScale : 1.0f, 0,
                              0, 0};
  GPUVS_CUDA_CHECK(
      cudaMemcpyAsync(scaler_.get(), &scaler, sizeof(scaler), cudaMemcpyHostToDevice, s));
  GPUVS_CUDA_CHECK(cudaMemsetAsync(rng_.get(), 0, rng_.bytes(), s));
  for (DeviceBuffer* b : {&grads_, &adam_m_, &adam_v_})
    if (b->get()) GPUVS_CUDA_CHECK(cudaMemsetAsync(b->get(), 0, b->bytes(), s));
  for (DeviceBuffer* b : {&logits_, &nsp_logits_, &loss_, &row_loss_, &counts_})
    GPUVS_CUDA_CHECK(cudaMemsetAsync(b->get(), 0, b->bytes(), s));
  generate_input(config_.seed);
  stream_.synchronize();
}

void BertLarge::cast_fp8_weights() {
  fp8_weight_scales_.run(stream_.get());
  for (int l = 0; l < kLayers; ++l) {
    const auto offs = fp8_weight_offsets(layout_.offsets(), l);
    for (int w = 0; w < kEncoderDenseCount; ++w)
      fp8_lin_[w]->cast_weight(l, master(offs[w]), stream_.get());
  }
}

// Two steps on the synthetic batch fill the amax histories (the first step's
// gradients are cast with scale 1: the second one's are scaled); then the state a
// fresh model has: zero gradients, step counter 0, no loss.
void BertLarge::calibrate_fp8() {
  for (int i = 0; i < 2; ++i) {
    if (train_)
      forward_backward(false);
    else
      forward();
  }
  cudaStream_t s = stream_.get();
  for (DeviceBuffer* b : {&grads_, &rng_, &loss_, &logits_, &nsp_logits_})
    if (b->get()) GPUVS_CUDA_CHECK(cudaMemsetAsync(b->get(), 0, b->bytes(), s));
  stream_.synchronize();
}

std::string BertLarge::fp8_plan() const {
  std::string out;
  for (const auto& f : fp8_lin_)
    if (f) out += f->plan() + "\n";
  return out;
}

void* BertLarge::param(int64_t off) const {
  if (dtype_ == DType::kF32) return master_.as<float>() + off;
  return static_cast<char*>(model_copy_.get()) + size_t(off) * es();
}

void BertLarge::generate_input(uint64_t seed) {
  InputArgs a;
  a.batch = b_;
  a.seq = t_;
  a.seed = seed;
  a.ids = ids_.as<int32_t>();
  a.types = types_.as<int32_t>();
  a.mask = mask_.as<int32_t>();
  a.labels = labels_.as<int32_t>();
  a.nsp_labels = nsp_labels_.as<int32_t>();
  generate_inputs(a, stream_.get());
  count_masked();
}

void BertLarge::count_masked() {
  if (!train_) return;
  std::vector<int32_t> labels(size_t(n_), 0);
  GPUVS_CUDA_CHECK(cudaMemcpyAsync(labels.data(), labels_.get(), labels.size() * 4,
                                   cudaMemcpyDeviceToHost, stream_.get()));
  stream_.synchronize();
  const auto masked = std::count_if(labels.begin(), labels.end(), [](int32_t l) { return l >= 0; });
  mlm_fits_ = masked <= mlm_cap_;
}

double BertLarge::loss() {
  return download(loss_.get(), 1, stream_.get())[0];
}

std::vector<std::string> BertLarge::parameter_names() const {
  std::vector<std::string> names;
  for (const auto& e : layout_.entries())
    names.push_back(e.name);
  return names;
}

namespace {

struct IntInput {
  const char* name;
  bool per_token;  // (B, T) or (B)
  int lo, hi;      // valid range [lo, hi), -100 also allowed where ignore
  bool ignore;
};

constexpr IntInput kInputs[] = {
    {"input_ids", true, 0, kVocab, false},      {"token_type_ids", true, 0, kTypeVocab, false},
    {"attention_mask", true, 0, 2, false},      {"labels", true, 0, kVocab, true},
    {"next_sentence_label", false, 0, 2, true},
};

}  // namespace

void BertLarge::set_tensor(const std::string& name, const HostTensor& t) {
  cudaStream_t s = stream_.get();
  if (t.numel() != static_cast<int64_t>(t.data.size()))
    throw Error(
        fmt::format("tensor {}: {} values for its shape of {}", name, t.data.size(), t.numel()));
  DeviceBuffer* int_dst[] = {&ids_, &types_, &mask_, &labels_, &nsp_labels_};
  for (size_t i = 0; i < std::size(kInputs); ++i) {
    const IntInput& in = kInputs[i];
    if (name != in.name) continue;
    const std::vector<int64_t> want =
        in.per_token ? std::vector<int64_t>{b_, t_} : std::vector<int64_t>{b_};
    if (t.shape != want)
      throw Error(
          fmt::format("{}: shape ({}) expected", name,
                      in.per_token ? fmt::format("{}, {}", b_, t_) : fmt::format("{}", b_)));
    std::vector<int32_t> v(t.data.size());
    for (size_t j = 0; j < v.size(); ++j) {
      v[j] = static_cast<int32_t>(t.data[j]);
      if (!((v[j] >= in.lo && v[j] < in.hi) || (in.ignore && v[j] == -100)))
        throw Error(fmt::format("{}: value {} is out of range", name, t.data[j]));
    }
    GPUVS_CUDA_CHECK(
        cudaMemcpyAsync(int_dst[i]->get(), v.data(), v.size() * 4, cudaMemcpyHostToDevice, s));
    stream_.synchronize();
    if (int_dst[i] == &labels_) count_masked();
    return;
  }
  if (const ParamEntry* e = layout_.find(name)) {
    const auto stored = layout_.to_stored(*e, t);
    GPUVS_CUDA_CHECK(cudaMemcpyAsync(master(e->offset), stored.data(), stored.size() * 4,
                                     cudaMemcpyHostToDevice, s));
    if (dtype_ != DType::kF32)
      cast_from_float(master(e->offset), param(e->offset), e->count, dtype_, s);
    fp8_weights_stale_ = fp8_;  // cast before the next step
    stream_.synchronize();
    return;
  }
  throw Error(fmt::format("bert-large has no tensor named '{}'", name));
}

void BertLarge::complete_logits() {
  if (logits_full_) return;
  // A training forward computed the masked rows only.
  if (weights_changed_)
    throw Error(
        "prediction_logits: the last training step computed the masked positions' logits "
        "only and an optimizer step has changed the weights since; run forward() for "
        "every position's");
  const Offsets& o = layout_.offsets();
  decoder_->forward(tr_y_.get(), param(o.word), param(o.dec_b), logits_.get(), ws(), stream_.get());
  logits_full_ = true;
}

std::optional<Model::OutputCount> BertLarge::count_nonfinite_logits() {
  complete_logits();
  const int64_t bad =
      count_nonfinite(logits_.get(), n_, kVocab, kVocabPadded, dtype_, stream_.get());
  return OutputCount{int64_t(n_) * kVocab, bad};
}

HostTensor BertLarge::get_tensor(const std::string& name) {
  cudaStream_t s = stream_.get();
  // An activation (rows, ld) in the storage type, first `cols` columns, as fp32.
  const auto activation = [&](const void* src, int64_t rows, int64_t cols, int64_t ld,
                              std::vector<int64_t> shape) {
    DeviceBuffer tmp(size_t(rows * ld) * 4);
    cast_to_float(src, tmp.as<float>(), rows * ld, dtype_, s);
    const auto all = download(tmp.get(), size_t(rows * ld), s);
    HostTensor out{std::move(shape), {}};
    out.data.reserve(size_t(rows * cols));
    for (int64_t r = 0; r < rows; ++r)
      out.data.insert(out.data.end(), all.begin() + r * ld, all.begin() + r * ld + cols);
    return out;
  };
  if (name == "prediction_logits" || name == "logits") {  // "logits": every model's main output
    complete_logits();
    return activation(logits_.get(), n_, kVocab, kVocabPadded, {b_, t_, kVocab});
  }
  if (name == "seq_relationship_logits")
    return activation(nsp_logits_.get(), b_, 2, kNspPadded, {b_, 2});
  if (name == "loss") return HostTensor{{}, download(loss_.get(), 1, s)};
  if (name == "loss/mlm") return HostTensor{{}, {download(loss_.get(), 3, s)[1]}};
  if (name == "loss/nsp") return HostTensor{{}, {download(loss_.get(), 3, s)[2]}};
  DeviceBuffer* int_src[] = {&ids_, &types_, &mask_, &labels_, &nsp_labels_};
  for (size_t i = 0; i < std::size(kInputs); ++i) {
    if (name != kInputs[i].name) continue;
    const int64_t n = kInputs[i].per_token ? n_ : b_;
    std::vector<int32_t> v(size_t(n), 0);
    GPUVS_CUDA_CHECK(
        cudaMemcpyAsync(v.data(), int_src[i]->get(), v.size() * 4, cudaMemcpyDeviceToHost, s));
    stream_.synchronize();
    HostTensor out{kInputs[i].per_token ? std::vector<int64_t>{b_, t_} : std::vector<int64_t>{b_},
                   std::vector<float>(v.begin(), v.end())};
    return out;
  }
  if (name.rfind("grad/", 0) == 0) {
    if (!train_) throw Error("gradients exist only in a model built for training");
    const ParamEntry* e = layout_.find(name.substr(5));
    if (!e) throw Error(fmt::format("bert-large has no parameter named '{}'", name.substr(5)));
    auto g = download(grad(e->offset), size_t(e->count), s);
    if (config_.precision == Precision::kFp16) {
      // fp16 gradients carry the loss scale of the last forward_backward.
      const float scale = download(scaler_.get(), 1, s)[0];
      for (float& v : g)
        v /= scale;
    }
    return layout_.from_stored(*e, g);
  }
  if (const ParamEntry* e = layout_.find(name))
    return layout_.from_stored(*e, download(master(e->offset), size_t(e->count), s));
  throw Error(fmt::format("bert-large has no tensor named '{}'", name));
}

}  // namespace bert

std::unique_ptr<Model> make_bert_large(const ModelConfig& config, int device) {
  return std::make_unique<bert::BertLarge>(config, device);
}

}  // namespace gpuvs::models
