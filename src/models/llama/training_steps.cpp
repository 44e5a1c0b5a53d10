// The Llama training's steps (training_model.h): every layer forward, the loss, every
// layer backward, AdamW; all enqueued on the model's stream, nothing allocated.
#include <cmath>

#include "gpu/check.h"
#include "models/llama/kernels.h"
#include "models/llama/training_model.h"

namespace gpuvs::models::llama::training_detail {

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

namespace {

// Profile regions per projection: forward, its FP8 casts, backward, its FP8 casts.
struct ProjRegions {
  const char *fwd, *fwd_cast, *bwd, *bwd_cast;
};
constexpr ProjRegions kRegions[kProjCount] = {
    {"fwd qkv", "fwd qkv fp8 cast", "bwd qkv", "bwd qkv fp8 cast"},
    {"fwd attention output", "fwd attention output fp8 cast", "bwd attention output",
     "bwd attention output fp8 cast"},
    {"fwd gate and up", "fwd gate and up fp8 cast", "bwd gate and up", "bwd gate and up fp8 cast"},
    {"fwd down", "fwd down fp8 cast", "bwd down", "bwd down fp8 cast"},
};

}  // namespace

void LlamaTraining::project(Proj p, size_t l, const void* x, void* y, const void* residual,
                            bool marks, bool cast_done) {
  const cudaStream_t s = stream_.get();
  const void* w = param(weight_offset(p, l));
  if (!fp8_) {
    proj_[index(p)]->fwd->run(x, w, y, 1.0f, residual ? 1.0f : 0.0f, residual, nullptr, ws_, s);
    return;
  }
  const ProjRegions& r = kRegions[index(p)];
  const bert::Fp8Marks m = marks ? bert::Fp8Marks{&timer_, r.fwd_cast, r.fwd} : bert::Fp8Marks{};
  fp8_lin_[index(p)]->forward(int(l), x, w, nullptr, y, ws_, s, m, cast_done, residual);
}

void LlamaTraining::project_backward(Proj p, size_t l, const void* x, const void* dy, void* dx,
                                     bool accumulate, bool cast_done) {
  const cudaStream_t s = stream_.get();
  const int64_t off = weight_offset(p, l);
  const float beta = accumulate ? 1.0f : 0.0f;
  if (!fp8_) {
    const Projection& pr = *proj_[index(p)];
    pr.wgrad->run(dy, x, grad(off), 1.0f, beta, grad(off), nullptr, ws_, s);
    pr.dgrad->run(dy, param(off), dx, 1.0f, 0.0f, nullptr, nullptr, ws_, s);
    return;
  }
  const ProjRegions& r = kRegions[index(p)];
  bert::Fp8Backward b;
  b.layer = int(l);
  b.x = x;
  b.w16 = param(off);
  b.dy = dy;
  b.dx = dx;
  b.dw = grad(off);
  b.beta_dw = beta;
  b.ws = ws_;
  b.marks = {&timer_, r.bwd_cast, r.bwd};
  b.dy_cast_done = cast_done;
  fp8_lin_[index(p)]->backward(b, s);
}

bool LlamaTraining::swiglu_into_down(size_t l, bool marks) {
  const cudaStream_t s = stream_.get();
  LayerActs& a = layers_[l];
  if (!fp8_) {
    swiglu(a.gu, a.a, n_, int(f_), DType::kBF16, s);
    return false;
  }
  // The down projection's E4M3 input (and its transpose) straight from gate and up;
  // the bf16 output only where a GEMM reads it.
  const bert::Fp8Linear& down = *fp8_lin_[index(Proj::kDown)];
  if (marks) timer_.mark(kRegions[index(Proj::kDown)].fwd_cast, s);
  bert::Fp8CastArgs c = down.input_cast(int(l), a.gu);
  c.op = bert::Fp8CastOp::kSwiglu;
  c.value_out = down.reads_bf16_input() ? a.a : nullptr;
  bert::fp8_cast(c, s);
  return true;
}

bool LlamaTraining::swiglu_grad_into_gate_up(size_t l) {
  const cudaStream_t s = stream_.get();
  LayerActs& a = layers_[l];
  if (!fp8_ || fp8_lin_[index(Proj::kGu)]->reads_bf16_grad()) {
    swiglu_backward(a.gu, d_a_, a.gu, n_, int(f_), DType::kBF16, s);  // gu now its gradient
    return false;
  }
  // The gate and up projections' E5M2 gradient (and its transpose) straight from
  // SwiGLU's gradient: no bf16 copy, as no GEMM reads one.
  timer_.mark(kRegions[index(Proj::kGu)].bwd_cast, s);
  bert::Fp8CastArgs c = fp8_lin_[index(Proj::kGu)]->grad_cast(int(l), d_a_);
  c.op = bert::Fp8CastOp::kSwigluGrad;
  c.aux = a.gu;
  bert::fp8_cast(c, s);
  return true;
}

void LlamaTraining::layer_forward(size_t l, bool recomputing) {
  const cudaStream_t s = stream_.get();
  const LayerParams& p = layout_.layers[l];
  LayerActs& a = layers_[l];
  void* out = l + 1 < layers_.size() ? layers_[l + 1].x : x_out_;
  const float eps = float(shape_.rms_norm_eps);
  // Recomputing, the whole layer is the backward's "bwd recompute" region.
  const auto mark = [&](const char* region) {
    if (!recomputing) timer_.mark(region, s);
  };
  mark("fwd qkv");
  rms_norm_forward_train(a.x, param(p.attn_norm), a.h1, a.rstd1, n_, int(c_), eps, DType::kBF16, s);
  project(Proj::kQkv, l, a.h1, qkv_tmp_, nullptr, !recomputing);
  mark("fwd rope");
  rope_split_forward(rope_args(a.q, a.k, a.v), s);
  mark("fwd attention");
  if (sdpa_) {
    sdpa_->forward(a.q, a.k, a.v, a.ctx, a.lse, sdpa_ws_, s);
  } else {
    bert::flash_attention_forward(flash_args(a), s);
    bert::heads_to_tokens(heads_args(a.ctx), s);
  }
  mark("fwd attention output");
  project(Proj::kO, l, a.ctx, a.mid, a.x, !recomputing);
  mark("fwd gate and up");
  rms_norm_forward_train(a.mid, param(p.mlp_norm), a.h2, a.rstd2, n_, int(c_), eps, DType::kBF16,
                         s);
  project(Proj::kGu, l, a.h2, a.gu, nullptr, !recomputing);
  mark("fwd down");
  // The layer's output is the next layer's kept input: recomputing runs neither the
  // down projection nor, in fp8 (whose weight gradient reads the E4M3 input the
  // forward kept), SwiGLU, unless a bf16 GEMM reads its output.
  if (recomputing && fp8_ && !fp8_lin_[index(Proj::kDown)]->reads_bf16_input()) return;
  const bool cast_done = swiglu_into_down(l, !recomputing);
  if (!recomputing) project(Proj::kDown, l, a.a, out, a.mid, true, cast_done);
}

void LlamaTraining::recompute(size_t l) {
  const Recompute rc = config_.recompute;
  if (rc == Recompute::kNone) return;
  const cudaStream_t s = stream_.get();
  timer_.mark("bwd recompute", s);
  if (rc == Recompute::kFull) {
    layer_forward(l, true);
    return;
  }
  // Selective: the norms' and SwiGLU's outputs, where a GEMM reads them in bf16 (an
  // FP8 weight gradient reads the E4M3 copy its forward kept instead).
  const LayerParams& p = layout_.layers[l];
  LayerActs& a = layers_[l];
  const float eps = float(shape_.rms_norm_eps);
  const auto read_in_bf16 = [&](Proj which) {
    return !fp8_ || fp8_lin_[index(which)]->reads_bf16_input();
  };
  if (read_in_bf16(Proj::kQkv))
    rms_norm_forward_train(a.x, param(p.attn_norm), a.h1, a.rstd1, n_, int(c_), eps, DType::kBF16,
                           s);
  if (read_in_bf16(Proj::kGu))
    rms_norm_forward_train(a.mid, param(p.mlp_norm), a.h2, a.rstd2, n_, int(c_), eps, DType::kBF16,
                           s);
  if (read_in_bf16(Proj::kDown)) swiglu(a.gu, a.a, n_, int(f_), DType::kBF16, s);
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
  recompute(l);
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
  project_backward(Proj::kDown, l, a.a, d_stream_, d_a_, accumulate);
  const bool gu_cast_done = swiglu_grad_into_gate_up(l);
  timer_.mark("bwd gate and up", s);
  project_backward(Proj::kGu, l, a.h2, a.gu, dh_, accumulate, gu_cast_done);
  nb.x = a.mid;
  nb.w = param(p.mlp_norm);
  nb.rstd = a.rstd2;
  nb.dw = grad(p.mlp_norm);
  rms_norm_backward(nb, s);
  timer_.mark("bwd attention output", s);
  project_backward(Proj::kO, l, a.ctx, d_stream_, d_ctx_, accumulate);
  timer_.mark("bwd attention", s);
  if (sdpa_) {
    sdpa_->backward(a.q, a.k, a.v, a.ctx, d_ctx_, a.lse, dq_, dk_, dv_, sdpa_ws_, s);
  } else {
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
  }
  timer_.mark("bwd rope", s);
  rope_split_backward(rope_args(dq_, dk_, dv_), s);
  timer_.mark("bwd qkv", s);
  project_backward(Proj::kQkv, l, a.h1, qkv_tmp_, dh_, accumulate);
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

void LlamaTraining::before_step() {
  if (!fp8_weights_stale_) return;
  cast_fp8_weights();
  fp8_weights_stale_ = false;
}

void LlamaTraining::after_step() {
  if (fp8_) {
    timer_.mark("fp8 scale update", stream_.get());
    bert::update_fp8_metas(fp8_metas_.as<bert::Fp8Meta>(),
                           kProjCount * shape_.layers * bert::Fp8Linear::kMetasPerLayer,
                           stream_.get());
  }
  timer_.stop(stream_.get());
}

void LlamaTraining::forward() {
  before_step();
  run_forward(false);
  after_step();
}

void LlamaTraining::forward_backward(bool accumulate) {
  before_step();
  run_forward(true);
  run_backward(accumulate);
  after_step();
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
  if (fp8_) {
    timer_.mark("adamw fp8 weight cast", s);
    cast_fp8_weights();
  }
  timer_.stop(s);
}

}  // namespace gpuvs::models::llama::training_detail
