// BERT-large steps: forward (embeddings, 24 encoder layers, MLM and NSP heads), the
// loss, backward and AdamW. Everything runs on stream() without allocation or host
// synchronisation, so a whole step can be captured in a CUDA graph.
#include <utility>

#include "core/error.h"
#include "models/bert/bert.h"

namespace gpuvs::models::bert {

namespace {

constexpr float kScoreScale = 0.125f;  // 1 / sqrt(head size 64)

// Dropout sites: 0 the embeddings; per layer 3: probabilities, attention output, FFN.
uint32_t layer_site(int l) {
  return 1 + 3 * static_cast<uint32_t>(l);
}

}  // namespace

Dropout BertLarge::drop(uint32_t site, bool train) const {
  Dropout d;
  d.p = train ? dropout_ : 0.0f;
  d.rng = rng_.as<uint64_t>();
  d.site = site;
  return d;
}

void BertLarge::before_step() {
  if (!fp8_weights_stale_) return;
  cast_fp8_weights();
  fp8_weights_stale_ = false;
}

void BertLarge::after_step() {
  if (fp8_) {
    timer_.mark("fp8 scale update", stream_.get());
    update_fp8_metas(fp8_metas_.as<Fp8Meta>(), 4 * kLayers * Fp8Linear::kMetasPerLayer,
                     stream_.get());
  }
  timer_.stop(stream_.get());
}

void BertLarge::forward() {
  before_step();
  run_forward(false);
  after_step();
}

void BertLarge::forward_backward(bool accumulate) {
  if (!train_) throw Error("forward_backward: this bert-large model was built for inference");
  before_step();
  advance_rng(rng_.as<uint64_t>(), stream_.get());
  run_forward(true);
  loss_forward_backward();
  run_backward(accumulate);
  after_step();
}

void BertLarge::optimizer_step(int micro_steps) {
  if (!train_) throw Error("optimizer_step: this bert-large model was built for inference");
  cudaStream_t s = stream_.get();
  timer_.mark("adamw", s);
  auto* scaler = scaler_.as<LossScaleState>();
  const bool fp16 = config_.precision == Precision::kFp16;
  if (fp16) check_finite(grads_.as<float>(), layout_.total(), scaler, s);
  AdamWArgs a;
  a.n = layout_.total();
  a.n_decay = layout_.decay_end();
  a.dtype = dtype_;
  a.master = master_.as<float>();
  a.m = adam_m_.as<float>();
  a.v = adam_v_.as<float>();
  a.grads = grads_.as<float>();
  a.model = dtype_ == DType::kF32 ? nullptr : model_copy_.get();
  a.lr = kLr;
  a.beta1 = kBeta1;
  a.beta2 = kBeta2;
  a.eps = kAdamEps;
  a.weight_decay = kWeightDecay;
  a.micro_steps = micro_steps;
  a.scaler = scaler;
  adamw_step(a, s);
  if (fp16) update_loss_scale(scaler, s);
  if (fp8_) {
    timer_.mark("adamw fp8 weight cast", s);
    cast_fp8_weights();
  }
  weights_changed_ = true;
  timer_.stop(s);
}

void BertLarge::run_forward(bool train) {
  cudaStream_t s = stream_.get();
  weights_changed_ = false;
  const Offsets& o = layout_.offsets();
  timer_.mark("fwd embeddings", s);
  EmbeddingArgs e;
  e.batch = b_;
  e.seq = t_;
  e.c = kHidden;
  e.dtype = dtype_;
  e.ids = ids_.as<int32_t>();
  e.types = types_.as<int32_t>();
  e.word = param(o.word);
  e.pos = param(o.pos);
  e.type = param(o.type);
  e.gamma = param(o.emb_ln);
  e.z_out = train ? emb_z_.get() : nullptr;
  e.y = emb_out_.get();
  e.stats = train ? emb_stats_.as<float>() : nullptr;
  e.eps = kLnEps;
  e.y_drop = drop(0, train);
  embedding_forward(e, s);
  const void* x = emb_out_.get();
  for (int l = 0; l < kLayers; ++l) {
    LayerActs& L = layers_[train_ ? l : l % 2];
    layer_forward(l, x, L, train);
    x = L.out.get();
  }
  heads_forward(x, train);
}

void BertLarge::layer_forward(int l, const void* x, LayerActs& L, bool train) {
  cudaStream_t s = stream_.get();
  const LayerOffsets& p = layout_.offsets().layers[l];
  const uint32_t site = layer_site(l);
  timer_.mark("fwd qkv", s);
  dense_forward(EncoderDense::kQkv, l, x, p.qkv_w, p.qkv_b, qkv_tok_.get());
  HeadsArgs h;
  h.batch = b_;
  h.seq = t_;
  h.heads = kHeads;
  h.head_dim = kHeadDim;
  h.nmat = 3;
  h.dtype = dtype_;
  h.tokens = qkv_tok_.get();
  h.split[0] = L.q.get();
  h.split[1] = L.k.get();
  h.split[2] = L.v.get();
  tokens_to_heads(h, s);

  if (flash_) {
    timer_.mark("fwd attention core", s);
    FlashArgs f;
    f.batch = b_;
    f.heads = kHeads;
    f.seq = t_;
    f.dtype = dtype_;
    f.q = L.q.get();
    f.k = L.k.get();
    f.v = L.v.get();
    f.mask = mask_.as<int32_t>();
    f.scale = kScoreScale;
    f.drop = drop(site, train);
    f.o = ctx_heads_.get();
    f.lse = train ? lse_.as<float>() + int64_t(l) * b_ * kHeads * t_ : nullptr;
    flash_attention_forward(f, s);
  } else {
    unfused_attention_forward(site, L, train);  // ends in "fwd attention context"
  }
  HeadsArgs m = h;
  m.nmat = 1;
  m.tokens = L.ctx.get();
  m.split[0] = ctx_heads_.get();
  m.split[1] = m.split[2] = nullptr;
  heads_to_tokens(m, s);

  timer_.mark("fwd attention out+ln", s);
  dense_forward(EncoderDense::kAttentionOut, l, L.ctx.get(), p.ao_w, p.ao_b, dense_out_.get());
  LnForwardArgs ln;
  ln.rows = n_;
  ln.c = kHidden;
  ln.dtype = dtype_;
  ln.x = dense_out_.get();
  ln.residual = x;
  ln.gamma = param(p.ln1);
  ln.z_out = train ? L.z1.get() : nullptr;
  ln.y = L.a.get();
  ln.stats = train ? L.stats1.as<float>() : nullptr;
  ln.eps = kLnEps;
  ln.x_drop = drop(site + 1, train);
  layer_norm_forward(ln, s);

  timer_.mark("fwd ffn1+gelu", s);
  dense_forward(EncoderDense::kFfn1, l, L.a.get(), p.ff1_w, p.ff1_b, L.h.get());
  void* g = train ? L.g.get() : L.h.get();
  if (fp8_) {
    // The GELU fused into ffn2's input cast; g in bf16 only where a GEMM reads it.
    const int ffn2 = dense_index(EncoderDense::kFfn2);
    timer_.mark(kDenseRegions[0][ffn2].cast, s);
    Fp8CastArgs c = fp8_lin_[ffn2]->input_cast(l, L.h.get());
    c.op = Fp8CastOp::kGelu;
    c.value_out = fp8_lin_[ffn2]->reads_bf16_input() ? g : nullptr;
    fp8_cast(c, s);
  } else {
    gelu_forward(L.h.get(), g, n_ * kFfn, dtype_, s);
  }
  timer_.mark("fwd ffn2+ln", s);
  dense_forward(EncoderDense::kFfn2, l, g, p.ff2_w, p.ff2_b, dense_out_.get(), fp8_);
  ln.residual = L.a.get();
  ln.gamma = param(p.ln2);
  ln.z_out = train ? L.z2.get() : nullptr;
  ln.y = L.out.get();
  ln.stats = train ? L.stats2.as<float>() : nullptr;
  ln.x_drop = drop(site + 2, train);
  layer_norm_forward(ln, s);
}

// Scores, masked softmax with dropout, context: the (B, H, T, T) probabilities in memory.
void BertLarge::unfused_attention_forward(uint32_t site, LayerActs& L, bool train) {
  cudaStream_t s = stream_.get();
  timer_.mark("fwd attention scores", s);
  scores_->run(L.q.get(), L.k.get(), L.probs.get(), kScoreScale, 0.0f, nullptr, nullptr, ws(), s);
  SoftmaxArgs sm;
  sm.batch = b_;
  sm.heads = kHeads;
  sm.seq = t_;
  sm.dtype = dtype_;
  sm.scores = L.probs.get();
  sm.mask = mask_.as<int32_t>();
  sm.p = L.probs.get();
  sm.drop = drop(site, train);
  const bool dropped = sm.drop.p > 0.0f;
  sm.p_drop = dropped ? L.probs_drop.get() : nullptr;
  timer_.mark("fwd attention softmax", s);
  attention_softmax_forward(sm, s);
  timer_.mark("fwd attention context", s);
  context_->run(dropped ? L.probs_drop.get() : L.probs.get(), L.v.get(), ctx_heads_.get(), 1.0f,
                0.0f, nullptr, nullptr, ws(), s);
}

void BertLarge::heads_forward(const void* x, bool train) {
  cudaStream_t s = stream_.get();
  const Offsets& o = layout_.offsets();
  timer_.mark("fwd mlm head", s);
  transform_->forward(x, param(o.tr_w), param(o.tr_b), tr_h_.get(), ws(), s);
  void* g = train ? tr_g_.get() : tr_h_.get();
  gelu_forward(tr_h_.get(), g, n_ * kHidden, dtype_, s);
  LnForwardArgs ln;
  ln.rows = n_;
  ln.c = kHidden;
  ln.dtype = dtype_;
  ln.x = g;
  ln.gamma = param(o.tr_ln);
  ln.y = tr_y_.get();
  ln.stats = train ? tr_stats_.as<float>() : nullptr;
  ln.eps = kLnEps;
  layer_norm_forward(ln, s);
  mlm_gathered_ = train && mlm_fits_;
  logits_full_ = !mlm_gathered_;
  if (mlm_gathered_) {  // the decoder on the masked rows only (the loss uses no others)
    CompactArgs c;
    c.n = n_;
    c.cap = mlm_cap_;
    c.labels = labels_.as<int32_t>();
    c.idx = mlm_idx_.as<int32_t>();
    c.inv = mlm_inv_.as<int32_t>();
    c.glabels = mlm_labels_.as<int32_t>();
    compact_labels(c, s);
    gather_rows(mlm_idx_.as<int32_t>(), mlm_cap_, kHidden, tr_y_.get(), mlm_x_.get(), dtype_, s);
    decoder_masked_->forward(mlm_x_.get(), param(o.word), param(o.dec_b), logits_.get(), ws(), s);
  } else {
    decoder_->forward(tr_y_.get(), param(o.word), param(o.dec_b), logits_.get(), ws(), s);
  }

  timer_.mark("fwd nsp head", s);
  pooler_->forward(x, param(o.pool_w), param(o.pool_b), pool_pre_.get(), ws(), s);
  tanh_forward(pool_pre_.get(), pooled_.get(), int64_t(b_) * kHidden, dtype_, s);
  nsp_->forward(pooled_.get(), param(o.nsp_w), param(o.nsp_b), nsp_logits_.get(), ws(), s);
}

void BertLarge::loss_forward_backward() {
  cudaStream_t s = stream_.get();
  timer_.mark("loss", s);
  float* counts = counts_.as<float>();
  count_valid_labels(labels_.as<int32_t>(), n_, counts, s);
  count_valid_labels(nsp_labels_.as<int32_t>(), b_, counts + 1, s);
  const int64_t mlm_rows = mlm_gathered_ ? mlm_cap_ : n_;
  XentArgs x;
  x.rows = mlm_rows;
  x.cols = kVocab;
  x.ld = kVocabPadded;
  x.dtype = dtype_;
  x.logits = logits_.get();
  x.labels = mlm_gathered_ ? mlm_labels_.as<int32_t>() : labels_.as<int32_t>();
  x.count = counts;
  x.scaler = scaler_.as<LossScaleState>();
  x.row_loss = row_loss_.as<float>();
  x.dlogits = dlogits_.get();
  softmax_xent(x, s);
  x.rows = b_;
  x.cols = 2;
  x.ld = kNspPadded;
  x.logits = nsp_logits_.get();
  x.labels = nsp_labels_.as<int32_t>();
  x.count = counts + 1;
  x.row_loss = row_loss_.as<float>() + n_;
  x.dlogits = dnsp_.get();
  softmax_xent(x, s);
  finish_loss(row_loss_.as<float>(), mlm_rows, counts, row_loss_.as<float>() + n_, b_, counts + 1,
              loss_.as<float>(), s);
}

void BertLarge::run_backward(bool accumulate) {
  cudaStream_t s = stream_.get();
  const Offsets& o = layout_.offsets();
  const float beta = accumulate ? 1.0f : 0.0f;
  const void* x_final = layers_.back().out.get();
  ColSumArgs cs;
  cs.dtype = dtype_;
  cs.accumulate = accumulate;
  cs.partials = partials_.as<float>();
  const auto bias_grad = [&](const void* dy, int64_t rows, int64_t cols, int64_t off) {
    ColSumArgs c = cs;
    c.rows = rows;
    c.cols = cols;
    c.x = dy;
    c.out = grad(off);
    column_sum(c, s);
  };

  // MLM head: decoder (tied to the word embeddings), LayerNorm, GELU, dense.
  timer_.mark("bwd mlm head", s);
  if (mlm_gathered_) {  // masked rows only; the others' gradient is zero
    decoder_masked_->backward_weight(mlm_x_.get(), dlogits_.get(), grad(o.word), beta, ws(), s);
    bias_grad(dlogits_.get(), mlm_cap_, kVocabPadded, o.dec_b);
    decoder_masked_->backward_data(dlogits_.get(), param(o.word), mlm_dx_.get(), 0.0f, nullptr,
                                   ws(), s);
    gather_rows(mlm_inv_.as<int32_t>(), n_, kHidden, mlm_dx_.get(), d_res_.get(), dtype_, s);
  } else {
    decoder_->backward_weight(tr_y_.get(), dlogits_.get(), grad(o.word), beta, ws(), s);
    bias_grad(dlogits_.get(), n_, kVocabPadded, o.dec_b);
    decoder_->backward_data(dlogits_.get(), param(o.word), d_res_.get(), 0.0f, nullptr, ws(), s);
  }
  LnBackwardArgs ln;
  ln.rows = n_;
  ln.c = kHidden;
  ln.dtype = dtype_;
  ln.dy = d_res_.get();
  ln.z = tr_g_.get();
  ln.gamma = param(o.tr_ln);
  ln.stats = tr_stats_.as<float>();
  ln.dz = d_res_.get();
  ln.dgamma = grad(o.tr_ln);
  ln.accumulate = accumulate;
  ln.partials = partials_.as<float>();
  layer_norm_backward(ln, s);
  gelu_backward(d_res_.get(), tr_h_.get(), d_res_.get(), n_ * kHidden, dtype_, s);
  transform_->backward_weight(x_final, d_res_.get(), grad(o.tr_w), beta, ws(), s);
  bias_grad(d_res_.get(), n_, kHidden, o.tr_b);
  transform_->backward_data(d_res_.get(), param(o.tr_w), d_out_.get(), 0.0f, nullptr, ws(), s);

  // NSP head: classifier, tanh, pooler; its input gradient adds to the [CLS] rows.
  timer_.mark("bwd nsp head", s);
  nsp_->backward_weight(pooled_.get(), dnsp_.get(), grad(o.nsp_w), beta, ws(), s);
  bias_grad(dnsp_.get(), b_, kNspPadded, o.nsp_b);
  nsp_->backward_data(dnsp_.get(), param(o.nsp_w), dpool_.get(), 0.0f, nullptr, ws(), s);
  tanh_backward(dpool_.get(), pooled_.get(), dpool_.get(), int64_t(b_) * kHidden, dtype_, s);
  pooler_->backward_weight(x_final, dpool_.get(), grad(o.pool_w), beta, ws(), s);
  bias_grad(dpool_.get(), b_, kHidden, o.pool_b);
  pooler_->backward_data(dpool_.get(), param(o.pool_w), d_out_.get(), 1.0f, d_out_.get(), ws(), s);

  void* dout = d_out_.get();
  void* dres = d_res_.get();
  for (int l = kLayers - 1; l >= 0; --l) {
    const void* x = l > 0 ? layers_[l - 1].out.get() : emb_out_.get();
    layer_backward(l, x, layers_[l], accumulate, dout, dres);
    std::swap(dout, dres);
  }

  // Embeddings: dropout after LN, LN, then the three tables.
  timer_.mark("bwd embeddings", s);
  ln.dy = dout;
  ln.z = emb_z_.get();
  ln.gamma = param(o.emb_ln);
  ln.stats = emb_stats_.as<float>();
  ln.dz = dres;
  ln.dgamma = grad(o.emb_ln);
  ln.y_drop = drop(0, true);
  layer_norm_backward(ln, s);
  embedding_scatter(ids_.as<int32_t>(), dres, n_, kHidden, dtype_, grad(o.word), s);
  ColSumArgs pos = cs;  // position t: the sum over the batch of row (b, t)
  pos.rows = b_;
  pos.cols = int64_t(t_) * kHidden;
  pos.x = dres;
  pos.out = grad(o.pos);
  column_sum(pos, s);
  ColSumArgs type = cs;  // per segment type
  type.rows = n_;
  type.cols = kHidden;
  type.x = dres;
  type.group = types_.as<int32_t>();
  type.groups = kTypeVocab;
  type.out = grad(o.type);
  column_sum(type, s);
}

void BertLarge::layer_backward(int l, const void* x, LayerActs& L, bool accumulate, void* dout,
                               void* dres) {
  cudaStream_t s = stream_.get();
  const LayerOffsets& p = layout_.offsets().layers[l];
  const uint32_t site = layer_site(l);
  const bool dropped = dropout_ > 0.0f;
  // The gradient of a dense layer's output: after the dropout's backward when there is
  // one, else the LayerNorm's input gradient itself.
  void* ddense = dropped ? d_drop_.get() : dres;
  const auto bias_grad = [&](const void* dy, int64_t cols, int64_t off) {
    ColSumArgs c;
    c.rows = n_;
    c.cols = cols;
    c.dtype = dtype_;
    c.x = dy;
    c.out = grad(off);
    c.accumulate = accumulate;
    c.partials = partials_.as<float>();
    column_sum(c, s);
  };

  // Output LayerNorm: dres = dz2 (the residual's gradient), ddense = dropout'(dz2).
  timer_.mark("bwd ffn2+ln", s);
  LnBackwardArgs ln;
  ln.rows = n_;
  ln.c = kHidden;
  ln.dtype = dtype_;
  ln.dy = dout;
  ln.z = L.z2.get();
  ln.gamma = param(p.ln2);
  ln.stats = L.stats2.as<float>();
  ln.dz = dres;
  ln.dx = dropped ? d_drop_.get() : nullptr;
  ln.dgamma = grad(p.ln2);
  ln.accumulate = accumulate;
  ln.partials = partials_.as<float>();
  ln.x_drop = drop(site + 2, true);
  layer_norm_backward(ln, s);
  dense_backward({.which = EncoderDense::kFfn2,
                  .layer = l,
                  .x = L.g.get(),
                  .dy = ddense,
                  .dx = d_h_.get(),
                  .beta_dx = 0.0f,
                  .w_off = p.ff2_w,
                  .accumulate = accumulate});
  bias_grad(ddense, kHidden, p.ff2_b);
  if (fp8_) {
    // The GELU's gradient fused into ffn1's gradient cast, with the bias gradient's
    // column sums; dh in bf16 only where a GEMM reads it so.
    const int ffn1 = dense_index(EncoderDense::kFfn1);
    timer_.mark(kDenseRegions[1][ffn1].cast, s);
    Fp8CastArgs c = fp8_lin_[ffn1]->grad_cast(l, d_h_.get());
    c.op = Fp8CastOp::kGeluGrad;
    c.aux = L.h.get();
    c.value_out = fp8_lin_[ffn1]->reads_bf16_grad() ? d_h_.get() : nullptr;
    c.colsum = partials_.as<float>();
    fp8_cast(c, s);
    timer_.mark("bwd ffn1+gelu", s);
    reduce_partials(c.colsum, fp8_colsum_partial_floats(n_, kFfn) / kFfn, kFfn, grad(p.ff1_b),
                    accumulate, s);
  } else {
    timer_.mark("bwd ffn1+gelu", s);
    gelu_backward(d_h_.get(), L.h.get(), d_h_.get(), n_ * kFfn, dtype_, s);
    bias_grad(d_h_.get(), kFfn, p.ff1_b);
  }
  // da = dh W1 + dz2
  dense_backward({.which = EncoderDense::kFfn1,
                  .layer = l,
                  .x = L.a.get(),
                  .dy = d_h_.get(),
                  .dx = dres,
                  .beta_dx = 1.0f,
                  .w_off = p.ff1_w,
                  .accumulate = accumulate,
                  .cast_done = fp8_});

  // Attention LayerNorm, in place: dres = dz1, ddense = dropout'(dz1).
  timer_.mark("bwd attention out+ln", s);
  ln.dy = dres;
  ln.z = L.z1.get();
  ln.gamma = param(p.ln1);
  ln.stats = L.stats1.as<float>();
  ln.dgamma = grad(p.ln1);
  ln.x_drop = drop(site + 1, true);
  layer_norm_backward(ln, s);
  dense_backward({.which = EncoderDense::kAttentionOut,
                  .layer = l,
                  .x = L.ctx.get(),
                  .dy = ddense,
                  .dx = d_ctx_.get(),
                  .beta_dx = 0.0f,
                  .w_off = p.ao_w,
                  .accumulate = accumulate});
  bias_grad(ddense, kHidden, p.ao_b);

  timer_.mark(flash_ ? "bwd attention core" : "bwd attention dP+dV", s);
  HeadsArgs h;
  h.batch = b_;
  h.seq = t_;
  h.heads = kHeads;
  h.head_dim = kHeadDim;
  h.nmat = 1;
  h.dtype = dtype_;
  h.tokens = d_ctx_.get();
  h.split[0] = d_ctx_heads_.get();
  tokens_to_heads(h, s);
  if (flash_) {
    FlashBackwardArgs fb;
    fb.f.batch = b_;
    fb.f.heads = kHeads;
    fb.f.seq = t_;
    fb.f.dtype = dtype_;
    fb.f.q = L.q.get();
    fb.f.k = L.k.get();
    fb.f.v = L.v.get();
    fb.f.mask = mask_.as<int32_t>();
    fb.f.scale = kScoreScale;
    fb.f.drop = drop(site, true);
    fb.f.lse = lse_.as<float>() + int64_t(l) * b_ * kHeads * t_;
    fb.d_o = d_ctx_heads_.get();
    fb.o_tokens = L.ctx.get();
    fb.do_tokens = d_ctx_.get();
    fb.delta = delta_.as<float>();
    fb.dq = d_q_.get();
    fb.dk = d_k_.get();
    fb.dv = d_v_.get();
    flash_attention_backward(fb, s);
  } else {
    unfused_attention_backward(site, L, dropped);  // ends in "bwd attention dQ+dK"
  }
  h.nmat = 3;
  h.tokens = d_qkv_.get();
  h.split[0] = d_q_.get();
  h.split[1] = d_k_.get();
  h.split[2] = d_v_.get();
  heads_to_tokens(h, s);
  timer_.mark("bwd qkv", s);
  bias_grad(d_qkv_.get(), 3 * kHidden, p.qkv_b);
  // dx = dqkv Wqkv + dz1
  dense_backward({.which = EncoderDense::kQkv,
                  .layer = l,
                  .x = x,
                  .dy = d_qkv_.get(),
                  .dx = dres,
                  .beta_dx = 1.0f,
                  .w_off = p.qkv_w,
                  .accumulate = accumulate});
}

// dP = dC V^T, dV = P^T dC, the softmax backward, dQ = dS K s, dK = dS^T Q s.
void BertLarge::unfused_attention_backward(uint32_t site, LayerActs& L, bool dropped) {
  cudaStream_t s = stream_.get();
  const void* p_used = dropped ? L.probs_drop.get() : L.probs.get();
  scores_->run(d_ctx_heads_.get(), L.v.get(), d_probs_.get(), 1.0f, 0.0f, nullptr, nullptr, ws(),
               s);
  transposed_->run(p_used, d_ctx_heads_.get(), d_v_.get(), 1.0f, 0.0f, nullptr, nullptr, ws(), s);
  SoftmaxBackwardArgs sb;
  sb.rows = int64_t(b_) * kHeads * t_;
  sb.seq = t_;
  sb.dtype = dtype_;
  sb.dp = d_probs_.get();
  sb.p = L.probs.get();
  sb.ds = d_probs_.get();
  sb.drop = drop(site, true);
  timer_.mark("bwd attention softmax", s);
  attention_softmax_backward(sb, s);
  // dQ = dS K / 8, dK = dS^T Q / 8
  timer_.mark("bwd attention dQ+dK", s);
  context_->run(d_probs_.get(), L.k.get(), d_q_.get(), kScoreScale, 0.0f, nullptr, nullptr, ws(),
                s);
  transposed_->run(d_probs_.get(), L.q.get(), d_k_.get(), kScoreScale, 0.0f, nullptr, nullptr, ws(),
                   s);
}

}  // namespace gpuvs::models::bert
