// The Llama decoder's training (training.h): parameters in flat arrays (FP32 master,
// bf16 working copy, FP32 gradients, AdamW moments), every layer's activations in one
// buffer each, cuBLASLt for every projection (BERT's Gemm wrapper), the kernels of
// train_kernels.h, kernels.h and bert/kernels.h for the rest.
#include "models/llama/training.h"

#include <fmt/format.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/units.h"
#include "gpu/check.h"
#include "gpu/cublaslt.h"
#include "gpu/device.h"
#include "gpu/gemm_spec.h"
#include "measure/region_timer.h"
#include "models/bert/gemm.h"
#include "models/bert/kernels.h"
#include "models/layers/gemm_dtype.h"
#include "models/llama/kernels.h"
#include "models/llama/shapes.h"
#include "models/llama/train_kernels.h"

namespace gpuvs::models {

namespace llama {
namespace {

constexpr float kLr = 3e-4f;
constexpr float kBeta1 = 0.9f, kBeta2 = 0.95f, kAdamEps = 1e-5f, kWeightDecay = 0.1f;
constexpr float kInitStd = 0.02f;  // LlamaConfig.initializer_range
constexpr int64_t kAlign = 64;     // elements: 128-byte rows of bf16 tensors

int64_t align_up(int64_t n) {
  return (n + kAlign - 1) / kAlign * kAlign;
}

// One parameter as transformers' state_dict names it, in the flat arrays.
struct Param {
  std::string name;
  std::vector<int64_t> shape;
  int64_t offset = 0, count = 0;
  bool norm = false;  // an RMSNorm weight: initialised to 1, no weight decay
};

struct LayerParams {
  int64_t attn_norm = 0, wqkv = 0, wo = 0, mlp_norm = 0, wgu = 0, wdown = 0;
};

// Matrices first (weight decay), then the RMSNorm weights; within a layer q, k and v
// adjacent (one (H*D + 2*KV, C) weight for the fused projection) and gate and up
// adjacent (one (2F, C) weight, gate first, as swiglu reads its input).
struct Layout {
  std::vector<Param> params;
  std::vector<LayerParams> layers;
  int64_t embed = 0, head = 0, final_norm = 0;
  int64_t total = 0, decay_end = 0;

  explicit Layout(const Shape& s) {
    const int64_t c = s.hidden, qd = int64_t(s.heads) * s.head_dim(), kv = s.kv_dim(),
                  f = s.intermediate, v = s.vocab;
    auto add = [&](std::string name, std::vector<int64_t> shape, bool norm) {
      Param p;
      p.name = std::move(name);
      p.shape = std::move(shape);
      p.count = 1;
      for (int64_t d : p.shape)
        p.count *= d;
      p.offset = total;
      p.norm = norm;
      total += align_up(p.count);
      params.push_back(p);
      return p.offset;
    };
    auto layer_name = [](int l, const char* what) {
      return fmt::format("model.layers.{}.{}", l, what);
    };
    embed = add("model.embed_tokens.weight", {v, c}, false);
    layers.resize(size_t(s.layers));
    for (int l = 0; l < s.layers; ++l) {
      LayerParams& o = layers[size_t(l)];
      o.wqkv = add(layer_name(l, "self_attn.q_proj.weight"), {qd, c}, false);
      add(layer_name(l, "self_attn.k_proj.weight"), {kv, c}, false);
      add(layer_name(l, "self_attn.v_proj.weight"), {kv, c}, false);
      o.wo = add(layer_name(l, "self_attn.o_proj.weight"), {c, qd}, false);
      o.wgu = add(layer_name(l, "mlp.gate_proj.weight"), {f, c}, false);
      add(layer_name(l, "mlp.up_proj.weight"), {f, c}, false);
      o.wdown = add(layer_name(l, "mlp.down_proj.weight"), {c, f}, false);
    }
    head = s.tied_embeddings ? embed : add("lm_head.weight", {v, c}, false);
    decay_end = total;
    for (int l = 0; l < s.layers; ++l) {
      layers[size_t(l)].attn_norm = add(layer_name(l, "input_layernorm.weight"), {c}, true);
      layers[size_t(l)].mlp_norm = add(layer_name(l, "post_attention_layernorm.weight"), {c}, true);
    }
    final_norm = add("model.norm.weight", {c}, true);
  }

  const Param* find(const std::string& name) const {
    for (const Param& p : params)
      if (p.name == name) return &p;
    return nullptr;
  }
};

// Fused projections whose adjacent weights are one matrix must start where the matrix
// does: the layout's alignment pads only the last of them. Checked once per shape.
void check_fused(const Shape& s) {
  const int64_t c = s.hidden, qd = int64_t(s.heads) * s.head_dim(), kv = s.kv_dim();
  if (qd * c % kAlign != 0 || kv * c % kAlign != 0 || int64_t(s.intermediate) * c % kAlign != 0)
    throw UsageError(
        fmt::format("llama: {}'s projections do not pack into fused matrices", s.name));
}

// A projection y = x W^T (no bias) on N rows, its data and weight gradients: forward
// y (N, out) (+ c_in, beta 1, where `residual`), dgrad dx (N, in) = dy W, wgrad
// dW (out, in) (+)= dy^T x in FP32.
struct Projection {
  std::unique_ptr<bert::Gemm> fwd, dgrad, wgrad;

  Projection(const LtHandle& lt, int64_t rows, int64_t in, int64_t out, bool residual,
             const std::string& name) {
    DenseGemms g = dense_gemms(rows, in, out, in, GemmElem::kBF16, false);
    g.forward.accumulate = residual;
    g.forward.name = name + " fwd";
    g.dgrad.name = name + " dgrad";
    g.wgrad.c = GemmElem::kF32;
    g.wgrad.accumulate = true;
    g.wgrad.name = name + " wgrad";
    fwd = std::make_unique<bert::Gemm>(lt, g.forward);
    dgrad = std::make_unique<bert::Gemm>(lt, g.dgrad);
    wgrad = std::make_unique<bert::Gemm>(lt, g.wgrad);
  }
};

// One layer's activations kept for the backward.
struct LayerActs {
  void* x = nullptr;                              // (N, C) the layer's input (the residual stream)
  void* h1 = nullptr;                             // (N, C) RMSNorm of x: the QKV projection's input
  float* rstd1 = nullptr;                         // (N)
  void *q = nullptr, *k = nullptr, *v = nullptr;  // (B, H, T, D), (B, G, T, D) x2, rotated
  float* lse = nullptr;                           // (B, H, T)
  void* ctx = nullptr;                            // (N, H*D) attention output, heads merged
  void* mid = nullptr;                            // (N, C) x + attention output projection
  void* h2 = nullptr;                             // (N, C) RMSNorm of mid
  float* rstd2 = nullptr;                         // (N)
  void* gu = nullptr;  // (N, 2F) gate and up; its gradient replaces it in the backward
  void* a = nullptr;   // (N, F) SwiGLU
};

// A buffer carved into aligned pieces.
class Carver {
 public:
  size_t add(size_t bytes) {
    const size_t at = bytes_;
    bytes_ += (bytes + 255) / 256 * 256;
    return at;
  }
  size_t bytes() const { return bytes_; }

 private:
  size_t bytes_ = 0;
};

class LlamaTraining final : public Model {
 public:
  LlamaTraining(const ModelConfig& config, const Shape& shape, int device);

  const ModelConfig& config() const override { return config_; }
  cudaStream_t stream() const override { return stream_.get(); }
  int64_t items_per_micro_step() const override { return n_; }
  std::string items_unit() const override { return "tokens/s"; }
  int64_t tokens_per_item() const override { return 1; }
  double flops_per_micro_step() const override { return flops_; }
  int64_t parameter_count() const override { return parameter_count_; }

  void generate_input(uint64_t seed) override;
  void forward() override;
  void forward_backward(bool accumulate) override;
  void optimizer_step(int micro_steps) override;
  double loss() override;

  std::vector<std::string> parameter_names() const override;
  void set_tensor(const std::string& name, const HostTensor& tensor) override;
  HostTensor get_tensor(const std::string& name) override;

  void enable_layer_timing(bool on) override { timer_.enable(on); }
  std::vector<std::pair<std::string, double>> layer_times() override { return timer_.totals(); }

 private:
  void run_forward(bool train);
  void run_backward(bool accumulate);
  void layer_forward(size_t l);
  void layer_backward(size_t l, bool accumulate);
  bert::FlashArgs flash_args(const LayerActs& a) const;
  // The rotary split between qkv_tmp_ and (q, k, v), either way.
  RopeSplitArgs rope_args(void* q, void* k, void* v) const;
  // The head merge or split between `tokens` (N, H*D) and o_heads_ (B, H, T, D).
  bert::HeadsArgs heads_args(void* tokens) const;
  void* param(int64_t off) const { return model_copy_.as<char>() + off * 2; }
  float* grad(int64_t off) const { return grads_.as<float>() + off; }
  void sync_working_copy();  // bf16 copy of the master weights

  ModelConfig config_;
  Shape shape_;
  int device_;
  int b_, t_;
  int64_t n_, c_, qd_, kv_, f_, v_, width_;
  double flops_ = 0;
  int64_t parameter_count_ = 0;
  Layout layout_;

  Stream stream_;
  LtHandle lt_;
  RegionTimer timer_;
  std::unique_ptr<Projection> qkv_, o_, gu_, down_, head_;

  DeviceBuffer master_, model_copy_, grads_, adam_m_, adam_v_, scaler_;
  DeviceBuffer acts_;  // every layer's LayerActs
  std::vector<LayerActs> layers_;
  DeviceBuffer work_;  // the rest: inputs, scratch, logits, loss
  int32_t *ids_ = nullptr, *labels_ = nullptr;
  float* inv_freq_ = nullptr;
  void* x_out_ = nullptr;      // (N, C) the last layer's output
  void* hf_ = nullptr;         // (N, C) final RMSNorm
  float* rstd_f_ = nullptr;    // (N)
  void* logits_ = nullptr;     // (N, V) bf16; the training step's gradient overwrites it
  float* row_loss_ = nullptr;  // (N)
  float* count_ = nullptr;     // (1) valid labels
  float* loss_ = nullptr;      // (3) as bert::finish_loss writes it
  void* qkv_tmp_ = nullptr;    // (N, width) the projection's output, then its gradient
  void* o_heads_ = nullptr;    // (B, H, T, D) attention output, then its gradient
  void *dq_ = nullptr, *dk_ = nullptr, *dv_ = nullptr;
  void* d_stream_ = nullptr;  // (N, C) the residual stream's gradient
  void* dh_ = nullptr;        // (N, C) a norm output's gradient
  void* d_ctx_ = nullptr;     // (N, H*D)
  void* d_a_ = nullptr;       // (N, F)
  float* delta_ = nullptr;    // (B, H, T)
  float* partials_ = nullptr;
  void* ws_ = nullptr;  // cuBLASLt workspace
  bool logits_are_gradient_ = false;
};

LlamaTraining::LlamaTraining(const ModelConfig& config, const Shape& shape, int device)
    : config_(config),
      shape_(shape),
      device_(device),
      b_(config.batch),
      t_(config.seq),
      n_(int64_t(config.batch) * config.seq),
      c_(shape.hidden),
      qd_(int64_t(shape.heads) * shape.head_dim()),
      kv_(shape.kv_dim()),
      f_(shape.intermediate),
      v_(shape.vocab),
      width_(qd_ + 2 * kv_),
      layout_(shape) {
  check_fused(shape_);
  DeviceScope scope(device);
  parameter_count_ = llama::parameter_count(shape_);
  // FLOPs as the published MFU figures count them (shapes.h): 6 N per token plus the
  // attention's 12 L h s, the causal mask not discounted.
  flops_ = train_flops_per_token(shape_, t_) * double(n_);

  const int64_t total = layout_.total;
  master_ = DeviceBuffer(size_t(total) * 4);
  model_copy_ = DeviceBuffer(size_t(total) * 2);
  grads_ = DeviceBuffer(size_t(total) * 4);
  adam_m_ = DeviceBuffer(size_t(total) * 4);
  adam_v_ = DeviceBuffer(size_t(total) * 4);
  scaler_ = DeviceBuffer(sizeof(bert::LossScaleState));

  const int64_t bht = int64_t(b_) * shape_.heads * t_;
  const size_t es = 2;
  Carver la;
  struct LayerAt {
    size_t x, h1, rstd1, q, k, v, lse, ctx, mid, h2, rstd2, gu, a;
  };
  std::vector<LayerAt> at(size_t(shape_.layers));
  for (LayerAt& o : at) {
    o.x = la.add(size_t(n_ * c_) * es);
    o.h1 = la.add(size_t(n_ * c_) * es);
    o.rstd1 = la.add(size_t(n_) * 4);
    o.q = la.add(size_t(n_ * qd_) * es);
    o.k = la.add(size_t(n_ * kv_) * es);
    o.v = la.add(size_t(n_ * kv_) * es);
    o.lse = la.add(size_t(bht) * 4);
    o.ctx = la.add(size_t(n_ * qd_) * es);
    o.mid = la.add(size_t(n_ * c_) * es);
    o.h2 = la.add(size_t(n_ * c_) * es);
    o.rstd2 = la.add(size_t(n_) * 4);
    o.gu = la.add(size_t(n_ * 2 * f_) * es);
    o.a = la.add(size_t(n_ * f_) * es);
  }
  acts_ = DeviceBuffer(la.bytes());
  char* base = acts_.as<char>();
  for (const LayerAt& o : at) {
    LayerActs a;
    a.x = base + o.x;
    a.h1 = base + o.h1;
    a.rstd1 = reinterpret_cast<float*>(base + o.rstd1);
    a.q = base + o.q;
    a.k = base + o.k;
    a.v = base + o.v;
    a.lse = reinterpret_cast<float*>(base + o.lse);
    a.ctx = base + o.ctx;
    a.mid = base + o.mid;
    a.h2 = base + o.h2;
    a.rstd2 = reinterpret_cast<float*>(base + o.rstd2);
    a.gu = base + o.gu;
    a.a = base + o.a;
    layers_.push_back(a);
  }

  Carver w;
  const size_t ids_at = w.add(size_t(n_) * 4), labels_at = w.add(size_t(n_) * 4);
  const size_t freq_at = w.add(size_t(shape_.head_dim() / 2) * 4);
  const size_t x_out_at = w.add(size_t(n_ * c_) * es), hf_at = w.add(size_t(n_ * c_) * es);
  const size_t rstd_at = w.add(size_t(n_) * 4);
  const size_t logits_at = w.add(size_t(n_ * v_) * es);
  const size_t row_loss_at = w.add(size_t(n_) * 4), count_at = w.add(4), loss_at = w.add(12);
  const size_t qkv_at = w.add(size_t(n_ * width_) * es);
  const size_t o_heads_at = w.add(size_t(n_ * qd_) * es);
  const size_t dq_at = w.add(size_t(n_ * qd_) * es), dk_at = w.add(size_t(n_ * kv_) * es),
               dv_at = w.add(size_t(n_ * kv_) * es);
  const size_t ds_at = w.add(size_t(n_ * c_) * es), dh_at = w.add(size_t(n_ * c_) * es);
  const size_t dctx_at = w.add(size_t(n_ * qd_) * es), da_at = w.add(size_t(n_ * f_) * es);
  const size_t delta_at = w.add(size_t(bht) * 4);
  const size_t part_at = w.add(size_t(rms_norm_partial_floats(n_, int(c_))) * 4);
  const size_t ws_at = w.add(bert::kGemmWorkspaceBytes);
  work_ = DeviceBuffer(w.bytes());
  char* wb = work_.as<char>();
  ids_ = reinterpret_cast<int32_t*>(wb + ids_at);
  labels_ = reinterpret_cast<int32_t*>(wb + labels_at);
  inv_freq_ = reinterpret_cast<float*>(wb + freq_at);
  x_out_ = wb + x_out_at;
  hf_ = wb + hf_at;
  rstd_f_ = reinterpret_cast<float*>(wb + rstd_at);
  logits_ = wb + logits_at;
  row_loss_ = reinterpret_cast<float*>(wb + row_loss_at);
  count_ = reinterpret_cast<float*>(wb + count_at);
  loss_ = reinterpret_cast<float*>(wb + loss_at);
  qkv_tmp_ = wb + qkv_at;
  o_heads_ = wb + o_heads_at;
  dq_ = wb + dq_at;
  dk_ = wb + dk_at;
  dv_ = wb + dv_at;
  d_stream_ = wb + ds_at;
  dh_ = wb + dh_at;
  d_ctx_ = wb + dctx_at;
  d_a_ = wb + da_at;
  delta_ = reinterpret_cast<float*>(wb + delta_at);
  partials_ = reinterpret_cast<float*>(wb + part_at);
  ws_ = wb + ws_at;

  qkv_ = std::make_unique<Projection>(lt_, n_, c_, width_, false, "qkv");
  o_ = std::make_unique<Projection>(lt_, n_, qd_, c_, true, "attention output");
  gu_ = std::make_unique<Projection>(lt_, n_, c_, 2 * f_, false, "gate and up");
  down_ = std::make_unique<Projection>(lt_, n_, f_, c_, true, "down");
  head_ = std::make_unique<Projection>(lt_, n_, c_, v_, false, "lm head");
  bert::flash_attention_init();

  // Weights: normal(0, 0.02) in the master, RMSNorm weights 1, then the bf16 copy;
  // zero moments, gradients and padding; AdamW's step counter at 0.
  const cudaStream_t s = stream_.get();
  GPUVS_CUDA_CHECK(cudaMemsetAsync(master_.get(), 0, size_t(total) * 4, s));
  GPUVS_CUDA_CHECK(cudaMemsetAsync(grads_.get(), 0, size_t(total) * 4, s));
  GPUVS_CUDA_CHECK(cudaMemsetAsync(adam_m_.get(), 0, size_t(total) * 4, s));
  GPUVS_CUDA_CHECK(cudaMemsetAsync(adam_v_.get(), 0, size_t(total) * 4, s));
  for (size_t i = 0; i < layout_.params.size(); ++i) {
    const Param& p = layout_.params[i];
    float* dst = master_.as<float>() + p.offset;
    if (p.norm)
      bert::fill(dst, p.count, 1.0f, s);
    else
      bert::init_normal(dst, p.count, kInitStd, config_.seed, i, s);
  }
  sync_working_copy();
  const bert::LossScaleState scaler{1.0f, 0, 0, 0};
  GPUVS_CUDA_CHECK(
      cudaMemcpyAsync(scaler_.get(), &scaler, sizeof(scaler), cudaMemcpyHostToDevice, s));
  std::vector<float> freq;
  for (double f : rope_inv_freq(shape_))
    freq.push_back(float(f));
  GPUVS_CUDA_CHECK(cudaMemcpyAsync(inv_freq_, freq.data(), freq.size() * sizeof(float),
                                   cudaMemcpyHostToDevice, s));
  stream_.synchronize();
  generate_input(config_.seed);
}

void LlamaTraining::sync_working_copy() {
  bert::cast_from_float(master_.as<float>(), model_copy_.get(), layout_.total, DType::kBF16,
                        stream_.get());
}

void LlamaTraining::generate_input(uint64_t seed) {
  LmInputArgs a;
  a.batch = b_;
  a.seq = t_;
  a.vocab = int(v_);
  a.seed = seed;
  a.ids = ids_;
  a.labels = labels_;
  lm_inputs(a, stream_.get());
  bert::count_valid_labels(labels_, n_, count_, stream_.get());
  stream_.synchronize();
}

bert::FlashArgs LlamaTraining::flash_args(const LayerActs& a) const {
  bert::FlashArgs f;
  f.batch = b_;
  f.heads = shape_.heads;
  f.kv_heads = shape_.kv_heads;
  f.seq = t_;
  f.head_dim = shape_.head_dim();
  f.dtype = DType::kBF16;
  f.q = a.q;
  f.k = a.k;
  f.v = a.v;
  f.causal = true;
  f.scale = float(1.0 / std::sqrt(double(shape_.head_dim())));
  f.o = o_heads_;
  f.lse = a.lse;
  return f;
}

RopeSplitArgs LlamaTraining::rope_args(void* q, void* k, void* v) const {
  RopeSplitArgs r;
  r.batch = b_;
  r.seq = t_;
  r.heads = shape_.heads;
  r.kv_heads = shape_.kv_heads;
  r.head_dim = shape_.head_dim();
  r.dtype = DType::kBF16;
  r.inv_freq = inv_freq_;
  r.qkv = qkv_tmp_;
  r.q = q;
  r.k = k;
  r.v = v;
  return r;
}

bert::HeadsArgs LlamaTraining::heads_args(void* tokens) const {
  bert::HeadsArgs h;
  h.batch = b_;
  h.seq = t_;
  h.heads = shape_.heads;
  h.head_dim = shape_.head_dim();
  h.dtype = DType::kBF16;
  h.tokens = tokens;
  h.split[0] = o_heads_;
  return h;
}

void LlamaTraining::layer_forward(size_t l) {
  const cudaStream_t s = stream_.get();
  const LayerParams& p = layout_.layers[l];
  LayerActs& a = layers_[l];
  void* out = l + 1 < layers_.size() ? layers_[l + 1].x : x_out_;
  const float eps = float(shape_.rms_norm_eps);
  timer_.mark("fwd qkv", s);
  rms_norm_forward_train(a.x, param(p.attn_norm), a.h1, a.rstd1, n_, int(c_), eps, DType::kBF16, s);
  qkv_->fwd->run(a.h1, param(p.wqkv), qkv_tmp_, 1.0f, 0.0f, nullptr, nullptr, ws_, s);
  timer_.mark("fwd rope", s);
  rope_split_forward(rope_args(a.q, a.k, a.v), s);
  timer_.mark("fwd attention", s);
  bert::flash_attention_forward(flash_args(a), s);
  bert::heads_to_tokens(heads_args(a.ctx), s);
  timer_.mark("fwd attention output", s);
  o_->fwd->run(a.ctx, param(p.wo), a.mid, 1.0f, 1.0f, a.x, nullptr, ws_, s);
  timer_.mark("fwd gate and up", s);
  rms_norm_forward_train(a.mid, param(p.mlp_norm), a.h2, a.rstd2, n_, int(c_), eps, DType::kBF16,
                         s);
  gu_->fwd->run(a.h2, param(p.wgu), a.gu, 1.0f, 0.0f, nullptr, nullptr, ws_, s);
  timer_.mark("fwd down", s);
  swiglu(a.gu, a.a, n_, int(f_), DType::kBF16, s);
  down_->fwd->run(a.a, param(p.wdown), out, 1.0f, 1.0f, a.mid, nullptr, ws_, s);
}

void LlamaTraining::run_forward(bool train) {
  const cudaStream_t s = stream_.get();
  timer_.mark("fwd embed", s);
  embed(ids_, param(layout_.embed), layers_[0].x, n_, int(c_), DType::kBF16, s);
  for (size_t l = 0; l < layers_.size(); ++l)
    layer_forward(l);
  timer_.mark("fwd lm head", s);
  rms_norm_forward_train(x_out_, param(layout_.final_norm), hf_, rstd_f_, n_, int(c_),
                         float(shape_.rms_norm_eps), DType::kBF16, s);
  head_->fwd->run(hf_, param(layout_.head), logits_, 1.0f, 0.0f, nullptr, nullptr, ws_, s);
  timer_.mark("loss", s);
  bert::XentArgs x;
  x.rows = n_;
  x.cols = int(v_);
  x.ld = int(v_);
  x.dtype = DType::kBF16;
  x.logits = logits_;
  x.labels = labels_;
  x.count = count_;
  x.scaler = scaler_.as<bert::LossScaleState>();
  x.row_loss = row_loss_;
  x.dlogits = train ? logits_ : nullptr;  // in place: each row is read before it is written
  bert::softmax_xent(x, s);
  bert::finish_loss(row_loss_, n_, count_, row_loss_, 0, count_, loss_, s);
  logits_are_gradient_ = train;
}

void LlamaTraining::layer_backward(size_t l, bool accumulate) {
  const cudaStream_t s = stream_.get();
  const LayerParams& p = layout_.layers[l];
  LayerActs& a = layers_[l];
  const float beta = accumulate ? 1.0f : 0.0f;
  RmsNormBackwardArgs nb;
  nb.rows = n_;
  nb.c = int(c_);
  nb.dtype = DType::kBF16;
  nb.dy = dh_;
  nb.dres = d_stream_;
  nb.dx = d_stream_;
  nb.accumulate = accumulate;
  nb.partials = partials_;

  timer_.mark("bwd down", s);
  down_->wgrad->run(d_stream_, a.a, grad(p.wdown), 1.0f, beta, grad(p.wdown), nullptr, ws_, s);
  down_->dgrad->run(d_stream_, param(p.wdown), d_a_, 1.0f, 0.0f, nullptr, nullptr, ws_, s);
  swiglu_backward(a.gu, d_a_, a.gu, n_, int(f_), DType::kBF16, s);  // gu now holds its gradient
  timer_.mark("bwd gate and up", s);
  gu_->wgrad->run(a.gu, a.h2, grad(p.wgu), 1.0f, beta, grad(p.wgu), nullptr, ws_, s);
  gu_->dgrad->run(a.gu, param(p.wgu), dh_, 1.0f, 0.0f, nullptr, nullptr, ws_, s);
  nb.x = a.mid;
  nb.w = param(p.mlp_norm);
  nb.rstd = a.rstd2;
  nb.dw = grad(p.mlp_norm);
  rms_norm_backward(nb, s);
  timer_.mark("bwd attention output", s);
  o_->wgrad->run(d_stream_, a.ctx, grad(p.wo), 1.0f, beta, grad(p.wo), nullptr, ws_, s);
  o_->dgrad->run(d_stream_, param(p.wo), d_ctx_, 1.0f, 0.0f, nullptr, nullptr, ws_, s);
  timer_.mark("bwd attention", s);
  bert::tokens_to_heads(heads_args(d_ctx_), s);
  bert::FlashBackwardArgs fb;
  fb.f = flash_args(a);
  fb.f.o = nullptr;
  fb.d_o = o_heads_;
  fb.o_tokens = a.ctx;
  fb.do_tokens = d_ctx_;
  fb.delta = delta_;
  fb.dq = dq_;
  fb.dk = dk_;
  fb.dv = dv_;
  bert::flash_attention_backward(fb, s);
  timer_.mark("bwd rope", s);
  rope_split_backward(rope_args(dq_, dk_, dv_), s);
  timer_.mark("bwd qkv", s);
  qkv_->wgrad->run(qkv_tmp_, a.h1, grad(p.wqkv), 1.0f, beta, grad(p.wqkv), nullptr, ws_, s);
  qkv_->dgrad->run(qkv_tmp_, param(p.wqkv), dh_, 1.0f, 0.0f, nullptr, nullptr, ws_, s);
  nb.x = a.x;
  nb.w = param(p.attn_norm);
  nb.rstd = a.rstd1;
  nb.dw = grad(p.attn_norm);
  rms_norm_backward(nb, s);
}

void LlamaTraining::run_backward(bool accumulate) {
  const cudaStream_t s = stream_.get();
  const float beta = accumulate ? 1.0f : 0.0f;
  timer_.mark("bwd lm head", s);
  // The head's weight gradient first: with tied embeddings it is the embeddings'
  // gradient, to which their scatter below adds.
  head_->wgrad->run(logits_, hf_, grad(layout_.head), 1.0f, beta, grad(layout_.head), nullptr, ws_,
                    s);
  head_->dgrad->run(logits_, param(layout_.head), dh_, 1.0f, 0.0f, nullptr, nullptr, ws_, s);
  RmsNormBackwardArgs nb;
  nb.rows = n_;
  nb.c = int(c_);
  nb.dtype = DType::kBF16;
  nb.dy = dh_;
  nb.x = x_out_;
  nb.w = param(layout_.final_norm);
  nb.rstd = rstd_f_;
  nb.dx = d_stream_;
  nb.dw = grad(layout_.final_norm);
  nb.accumulate = accumulate;
  nb.partials = partials_;
  rms_norm_backward(nb, s);
  for (size_t l = layers_.size(); l-- > 0;)
    layer_backward(l, accumulate);
  timer_.mark("bwd embed", s);
  if (!shape_.tied_embeddings && !accumulate)
    GPUVS_CUDA_CHECK(cudaMemsetAsync(grad(layout_.embed), 0, size_t(v_ * c_) * sizeof(float), s));
  bert::embedding_scatter(ids_, d_stream_, n_, int(c_), DType::kBF16, grad(layout_.embed), s);
}

void LlamaTraining::forward() {
  run_forward(false);
  timer_.stop(stream_.get());
}

void LlamaTraining::forward_backward(bool accumulate) {
  run_forward(true);
  run_backward(accumulate);
  timer_.stop(stream_.get());
}

void LlamaTraining::optimizer_step(int micro_steps) {
  const cudaStream_t s = stream_.get();
  timer_.mark("adamw", s);
  bert::AdamWArgs a;
  a.n = layout_.total;
  a.n_decay = layout_.decay_end;
  a.dtype = DType::kBF16;
  a.master = master_.as<float>();
  a.m = adam_m_.as<float>();
  a.v = adam_v_.as<float>();
  a.grads = grads_.as<float>();
  a.model = model_copy_.get();
  a.lr = kLr;
  a.beta1 = kBeta1;
  a.beta2 = kBeta2;
  a.eps = kAdamEps;
  a.weight_decay = kWeightDecay;
  a.micro_steps = micro_steps;
  a.scaler = scaler_.as<bert::LossScaleState>();
  bert::adamw_step(a, s);
  timer_.stop(s);
}

std::vector<float> download_floats(const void* src, size_t count, cudaStream_t s) {
  std::vector<float> out(count);
  GPUVS_CUDA_CHECK(
      cudaMemcpyAsync(out.data(), src, count * sizeof(float), cudaMemcpyDeviceToHost, s));
  GPUVS_CUDA_CHECK(cudaStreamSynchronize(s));
  return out;
}

double LlamaTraining::loss() {
  return download_floats(loss_, 1, stream_.get())[0];
}

std::vector<std::string> LlamaTraining::parameter_names() const {
  std::vector<std::string> names;
  for (const Param& p : layout_.params)
    names.push_back(p.name);
  return names;
}

void LlamaTraining::set_tensor(const std::string& name, const HostTensor& t) {
  DeviceScope scope(device_);
  const cudaStream_t s = stream_.get();
  if (name == "input_ids") {
    if (t.numel() != n_)
      throw Error(fmt::format("llama: input_ids of {} values for {} x {}", t.numel(), b_, t_));
    std::vector<int32_t> ids, labels(size_t(n_), -100);
    for (float x : t.data)
      ids.push_back(int32_t(x));
    for (int64_t i = 0; i < n_; ++i)
      if ((i + 1) % t_ != 0) labels[size_t(i)] = ids[size_t(i) + 1];
    GPUVS_CUDA_CHECK(cudaMemcpyAsync(ids_, ids.data(), ids.size() * 4, cudaMemcpyHostToDevice, s));
    GPUVS_CUDA_CHECK(
        cudaMemcpyAsync(labels_, labels.data(), labels.size() * 4, cudaMemcpyHostToDevice, s));
    bert::count_valid_labels(labels_, n_, count_, s);
    stream_.synchronize();
    return;
  }
  const Param* p = layout_.find(name);
  if (!p) throw Error(fmt::format("llama: no parameter '{}'", name));
  if (t.shape != p->shape)
    throw Error(
        fmt::format("llama: '{}' has {} values, the shape wants {}", name, t.numel(), p->count));
  GPUVS_CUDA_CHECK(cudaMemcpyAsync(master_.as<float>() + p->offset, t.data.data(),
                                   size_t(p->count) * 4, cudaMemcpyHostToDevice, s));
  sync_working_copy();
  stream_.synchronize();
}

HostTensor LlamaTraining::get_tensor(const std::string& name) {
  DeviceScope scope(device_);
  const cudaStream_t s = stream_.get();
  HostTensor out;
  if (name == "loss") {
    out.data = {float(loss())};
    return out;
  }
  if (name == "logits") {
    if (logits_are_gradient_) run_forward(false);  // the logits themselves, again
    DeviceBuffer tmp(size_t(n_ * v_) * 4);
    bert::cast_to_float(logits_, tmp.as<float>(), n_ * v_, DType::kBF16, s);
    out.shape = {b_, t_, v_};
    out.data = download_floats(tmp.get(), size_t(n_ * v_), s);
    return out;
  }
  const bool is_grad = name.rfind("grad/", 0) == 0;
  const Param* p = layout_.find(is_grad ? name.substr(5) : name);
  if (!p) throw Error(fmt::format("llama: no tensor '{}'", name));
  out.shape = p->shape;
  out.data = download_floats((is_grad ? grads_.as<float>() : master_.as<float>()) + p->offset,
                             size_t(p->count), s);
  return out;
}

}  // namespace
}  // namespace llama

std::unique_ptr<Model> make_llama_training(const ModelConfig& c, int device) {
  const std::string prefix = "llama-";
  const std::string size = c.model.rfind(prefix, 0) == 0 ? c.model.substr(prefix.size()) : "";
  const std::optional<llama::Shape> shape = llama::find_shape(size);
  if (!shape)
    throw UsageError(fmt::format("llama: unknown size '{}' (sizes: {})", size, llama::size_list()));
  return make_llama_training_of_shape(c, *shape, device);
}

std::unique_ptr<Model> make_llama_training_of_shape(const ModelConfig& c, const llama::Shape& s,
                                                    int device) {
  const std::optional<llama::Shape> shape = s;
  if (c.mode != Mode::kTrain)
    throw UsageError("llama: this model trains; inference is gpuvs model llama --mode infer");
  if (c.precision != Precision::kBf16)
    throw UsageError(fmt::format(
        "llama training: --precision {} is not built; bf16 is (the attention kernels are "
        "16-bit; fp8 training is not built yet)",
        to_string(c.precision)));
  if (c.batch < 1) throw UsageError(fmt::format("llama: batch {} (at least 1)", c.batch));
  if (c.seq < 64 || c.seq % 64 != 0 || c.seq > shape->max_context)
    throw UsageError(fmt::format("llama: --seq {}: a multiple of 64 up to {}'s context of {}",
                                 c.seq, shape->name, shape->max_context));
  if (!bert::flash_attention_supported(DType::kBF16, c.seq, shape->head_dim()))
    throw UsageError(
        fmt::format("llama: the attention kernels do not take head size {}", shape->head_dim()));
  DeviceScope scope(device);
  const auto [free_b, total_b] = device_memory_info();
  // FP32 master, m, v and gradient and the bf16 copy: 18 bytes a parameter; then what
  // one sequence keeps: per layer and token the bf16 activations of LayerActs (the
  // input, two norms, the mid-point, Q, K, V, the context, gate and up, SwiGLU), its
  // logits and its share of the scratch.
  const llama::Shape& sh = *shape;
  const double states = 18.0 * double(llama::parameter_count(sh));
  const double qd = double(sh.heads) * sh.head_dim(), kv = sh.kv_dim();
  const double per_token =
      2.0 * (sh.layers * (4.0 * sh.hidden + 2 * qd + 2 * kv + 3.0 * sh.intermediate) + sh.vocab +
             4.0 * sh.hidden + 2 * qd + 2 * kv + 3.0 * sh.intermediate);
  const double one_sequence = per_token * c.seq;
  if (states + one_sequence > double(free_b))
    throw OutOfMemoryError(fmt::format(
        "{} does not train on one GPU with this memory: its weights, gradients and AdamW "
        "state take {} (18 bytes a parameter: FP32 master, moments and gradient, the bf16 "
        "copy) and one sequence of {} tokens {} more, where GPU {} has {} free; gpuvs advise "
        "lays out a run that shards them over GPUs",
        sh.name, format_si(states, "B"), c.seq, format_si(one_sequence, "B"), device,
        format_si(double(free_b), "B")));
  return std::make_unique<llama::LlamaTraining>(c, *shape, device);
}

}  // namespace gpuvs::models
