// Internal to the Llama training (training.cpp: construction, tensors in and out, the
// factory; training_steps.cpp: the forward, backward and optimizer steps): the
// parameter layout, the projections, the activations kept per layer and the model
// class. See training.h for what the model computes.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "gpu/cublaslt.h"
#include "gpu/device.h"
#include "gpu/gemm_spec.h"
#include "measure/region_timer.h"
#include "models/bert/fp8.h"
#include "models/bert/fp8_linear.h"
#include "models/bert/gemm.h"
#include "models/bert/kernels.h"
#include "models/layers/cudnn_sdpa.h"
#include "models/layers/gemm_dtype.h"
#include "models/llama/shapes.h"
#include "models/llama/train_kernels.h"
#include "models/model.h"

namespace gpuvs::models::llama::training_detail {

constexpr float kLr = 3e-4f;
constexpr float kBeta1 = 0.9f, kBeta2 = 0.95f, kAdamEps = 1e-5f, kWeightDecay = 0.1f;
constexpr float kInitStd = 0.02f;  // LlamaConfig.initializer_range
constexpr int64_t kAlign = 64;     // elements: 128-byte rows of bf16 tensors

inline int64_t align_up(int64_t n) {
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
inline void check_fused(const Shape& s) {
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

// A decoder layer's four projections, in the order of LlamaTraining's arrays and of
// the FP8 metas.
enum class Proj { kQkv, kO, kGu, kDown };
constexpr int kProjCount = 4;
constexpr size_t index(Proj p) {
  return size_t(p);
}

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

  std::string attention_kernel() const override { return attention_kernel_; }
  void enable_layer_timing(bool on) override { timer_.enable(on); }
  std::vector<std::pair<std::string, double>> layer_times() override { return timer_.totals(); }

  // fp8: which GEMMs run in FP8, one line per projection (Fp8Linear::plan()), and the
  // LM head's; empty for bf16.
  std::string fp8_plan() const;

 private:
  void run_forward(bool train);
  void run_backward(bool accumulate);
  // recomputing: in the backward (config.recompute full): no profile marks of its own,
  // and the down projection, whose output the next layer kept, not run.
  void layer_forward(size_t l, bool recomputing = false);
  // What config.recompute says layer l's backward needs again, before it.
  void recompute(size_t l);
  void layer_backward(size_t l, bool accumulate);
  // cuDNN's attention where config.attention_kernel allows it and cuDNN has an engine
  // (sdpa_ set, attention_kernel_ naming it), else gpuvs's kernels (attention_kernel_
  // says why where auto fell back).
  void choose_attention();
  bert::FlashArgs flash_args(const LayerActs& a) const;
  // The rotary split between qkv_tmp_ and (q, k, v), either way.
  RopeSplitArgs rope_args(void* q, void* k, void* v) const;
  // The head merge or split between `tokens` (N, H*D) and o_heads_ (B, H, T, D).
  bert::HeadsArgs heads_args(void* tokens) const;
  // y (N, out) = x W^T [+ residual] of projection p in layer l, in bf16 (Projection)
  // or FP8 (Fp8Linear; its casts are timed as "<region> fp8 cast", its GEMM in the
  // projection's region).
  // marks false: no FP8 profile marks (recomputing); cast_done: x's FP8 cast was fused
  // into the kernel that produced it.
  void project(Proj p, size_t l, const void* x, void* y, const void* residual, bool marks = true,
               bool cast_done = false);
  // Its gradients: dW (+)= dy^T x (FP32), dx = dy W; cast_done: dy's FP8 cast was fused.
  void project_backward(Proj p, size_t l, const void* x, const void* dy, void* dx, bool accumulate,
                        bool cast_done = false);
  // SwiGLU of layer l: bf16, its output in the layer's `a`; fp8: fused with the down
  // projection's input cast (true: the cast is done; `a` written only where a bf16
  // GEMM reads it). marks: the cast's profile mark.
  bool swiglu_into_down(size_t l, bool marks);
  // SwiGLU's backward from d_a_: bf16 (or an FP8 GEMM of gate and up refused), the
  // gradient over gu in place (false); fp8, fused with the gate and up projections'
  // gradient cast (true: gu keeps its values).
  bool swiglu_grad_into_gate_up(size_t l);
  int64_t weight_offset(Proj p, size_t l) const;
  void cast_fp8_weights();  // every FP8 weight from the master, current scaling
  void calibrate_fp8();     // fills the delayed scales' histories
  void before_step();       // fp8: weights set through set_tensor are cast
  void after_step();        // fp8: delayed scales updated
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
  std::unique_ptr<Projection> proj_[kProjCount];  // bf16 only
  std::unique_ptr<Projection> head_;              // bf16 in both precisions
  bool fp8_ = false;
  bool fp8_weights_stale_ = false;
  DeviceBuffer fp8_metas_;  // (kProjCount, layers, Fp8Linear::kMetasPerLayer) Fp8Meta
  std::unique_ptr<bert::Fp8Linear> fp8_lin_[kProjCount];  // fp8 only
  bert::Fp8ScaleBatch fp8_weight_scales_;

  DeviceBuffer master_, model_copy_, grads_, adam_m_, adam_v_, scaler_;
  DeviceBuffer acts_;  // every layer's LayerActs
  std::vector<LayerActs> layers_;
  DeviceBuffer work_;  // the rest: inputs, scratch, logits, loss
  int32_t *ids_ = nullptr, *labels_ = nullptr;
  float* inv_freq_ = nullptr;
  void* x_out_ = nullptr;            // (N, C) the last layer's output
  void* hf_ = nullptr;               // (N, C) final RMSNorm
  float* rstd_f_ = nullptr;          // (N)
  void* logits_ = nullptr;           // (N, V) bf16; the training step's gradient overwrites it
  float* row_loss_ = nullptr;        // (N)
  float* count_ = nullptr;           // (1) valid labels
  float* loss_ = nullptr;            // (3) as bert::finish_loss writes it
  void* qkv_tmp_ = nullptr;          // (N, width) the projection's output, then its gradient
  std::unique_ptr<CudnnSdpa> sdpa_;  // null: gpuvs's attention kernels
  std::string attention_kernel_;
  void* sdpa_ws_ = nullptr;  // cuDNN's attention scratch
  // gpuvs's kernels only (cuDNN reads and writes the token-major ctx directly):
  void* o_heads_ = nullptr;  // (B, H, T, D) attention output, then its gradient
  void *dq_ = nullptr, *dk_ = nullptr, *dv_ = nullptr;
  void* d_stream_ = nullptr;  // (N, C) the residual stream's gradient
  void* dh_ = nullptr;        // (N, C) a norm output's gradient
  void* d_ctx_ = nullptr;     // (N, H*D)
  void* d_a_ = nullptr;       // (N, F)
  float* delta_ = nullptr;    // (B, H, T), gpuvs's kernels only
  float* partials_ = nullptr;
  void* ws_ = nullptr;  // cuBLASLt workspace
  bool logits_are_gradient_ = false;
};

}  // namespace gpuvs::models::llama::training_detail
