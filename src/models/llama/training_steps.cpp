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

}  // namespace gpuvs::models::llama::training_detail
