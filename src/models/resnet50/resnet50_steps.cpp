// ResNet-50 steps: forward, loss, backward, optimizer. Everything goes on stream();
// nothing allocates or synchronises (loss() excepted), so the trainer can capture a
// whole step in a CUDA graph.
#include <utility>

#include "core/error.h"
#include "gpu/check.h"
#include "models/layers/pooling.h"
#include "models/layers/softmax_xent.h"
#include "models/layers/tensor_ops.h"
#include "models/resnet50/resnet50.h"

namespace gpuvs::models::resnet50 {

void ResNet50::generate_input(uint64_t seed) {
  SyntheticImages s;
  s.n = n_;
  s.h = kImage;
  s.w = kImage;
  s.c = 3;
  s.c_padded = in_c_;
  s.dtype = dtype_;
  s.classes = kClasses;
  generate_images(s, seed, input_.get(), labels_.as<int32_t>(), stream_.get());
}

void ResNet50::conv_bn_forward(ConvBn& l, const void* in, const void* residual, bool train) {
  cudaStream_t s = stream_.get();
  {
    RegionTimer::Scope t(timer_, l.fwd_conv, s);
    l.conv->forward(cudnn_.get(), in, param(l.w_off), l.x.get(), ws(), ws_bytes());
  }
  RegionTimer::Scope t(timer_, l.fwd_bn, s);
  BnForwardArgs a;
  a.x = l.x.get();
  a.y = l.y.get();
  a.residual = residual;
  a.relu = l.relu;
  a.train = train;
  a.gamma = master(l.gamma_off);
  a.beta = master(l.beta_off);
  a.running_mean = running_.as<float>() + l.run_off;
  a.running_var = running_.as<float>() + l.run_off + l.bn.c;
  a.save_mean = saved_.as<float>() + l.save_off;
  a.save_invstd = saved_.as<float>() + l.save_off + l.bn.c;
  a.scale_shift = saved_.as<float>() + l.save_off + 2 * l.bn.c;
  a.partials = partials_.as<float>();
  bn_forward(l.bn, a, s);
}

void ResNet50::run_forward(bool train) {
  cudaStream_t s = stream_.get();
  conv_bn_forward(stem_, input_.get(), nullptr, train);
  const PoolShape stem_out{n_, stem_.conv->out_h(), stem_.conv->out_w(), 64, dtype_};
  {
    RegionTimer::Scope t(timer_, "fwd maxpool", s);
    maxpool_forward(stem_out, stem_.y.get(), pool_out_.get(),
                    train ? argmax_.as<uint8_t>() : nullptr, s);
  }
  for (auto& b : blocks_) {
    conv_bn_forward(b.c1, b.input, nullptr, train);
    conv_bn_forward(b.c2, b.c1.y.get(), nullptr, train);
    if (b.down) conv_bn_forward(*b.down, b.input, nullptr, train);
    conv_bn_forward(b.c3, b.c2.y.get(), b.down ? b.down->y.get() : b.input, train);
  }
  const ConvBn& last = blocks_.back().c3;
  const PoolShape head{n_, last.conv->out_h(), last.conv->out_w(), 2048, dtype_};
  {
    RegionTimer::Scope t(timer_, "fwd avgpool", s);
    avgpool_forward(head, last.y.get(), pooled_.get(), s);
  }
  const ParamEntry& fc_w = layout_.at(fc_entry_);
  const ParamEntry& fc_b = layout_.at(fc_entry_ + 1);
  {
    RegionTimer::Scope t(timer_, "fwd fc", s);
    fc_->forward(pooled_.get(), param(fc_w.offset), logits_.as<float>(), ws(), s);
  }
  if (!train) {
    RegionTimer::Scope t(timer_, "fwd fc bias", s);
    add_bias(logits_.as<float>(), master(fc_b.offset), n_, kClasses, s);
  }
}

void ResNet50::forward() {
  run_forward(false);
}

void ResNet50::conv_bn_backward_bn(ConvBn& l, void* dy, void* g_out, bool accumulate) {
  RegionTimer::Scope t(timer_, l.bwd_bn, stream_.get());
  BnBackwardArgs a;
  a.dy = dy;
  // The ReLU mask comes from y only where a residual was added before the ReLU;
  // elsewhere from x and the forward's scale/shift (one tensor fewer to read).
  a.y = l.residual ? l.y.get() : nullptr;
  a.scale_shift = saved_.as<float>() + l.save_off + 2 * l.bn.c;
  a.x = l.x.get();
  a.dx = dy;
  a.g_out = g_out;
  a.relu = l.relu;
  a.gamma = master(l.gamma_off);
  a.save_mean = saved_.as<float>() + l.save_off;
  a.save_invstd = saved_.as<float>() + l.save_off + l.bn.c;
  a.dgamma = grad(l.gamma_off);
  a.dbeta = grad(l.beta_off);
  a.accumulate = accumulate;
  a.coef = bn_scratch_.as<float>();
  a.partials = partials_.as<float>();
  bn_backward(l.bn, a, stream_.get());
}

void ResNet50::forward_backward(bool accumulate) {
  if (!train_) throw UsageError("forward_backward on a model built for inference");
  cudaStream_t s = stream_.get();
  run_forward(true);
  const ParamEntry& fc_b = layout_.at(fc_entry_ + 1);
  {
    RegionTimer::Scope t(timer_, "loss", s);
    XentArgs x;
    x.n = n_;
    x.classes = kClasses;
    x.dtype = dtype_;
    x.logits = logits_.as<float>();
    x.bias = master(fc_b.offset);
    x.labels = labels_.as<int32_t>();
    // LossScaleState::scale is the struct's first member.
    x.loss_scale = config_.precision == Precision::kFp16 ? scaler_.as<float>() : nullptr;
    x.row_loss = row_loss_.as<float>();
    x.loss = loss_.as<float>();
    x.dlogits = dlogits_.get();
    x.dbias = grad(fc_b.offset);
    x.accumulate = accumulate;
    softmax_xent_forward_backward(x, s);
  }
  run_backward(accumulate);
}

void ResNet50::run_backward(bool accumulate) {
  cudaStream_t s = stream_.get();
  cudnnHandle_t h = cudnn_.get();
  const float beta = accumulate ? 1.0f : 0.0f;
  const ParamEntry& fc_w = layout_.at(fc_entry_);
  {
    RegionTimer::Scope t(timer_, "bwd fc", s);
    fc_->backward_weight(pooled_.get(), dlogits_.get(), grad(fc_w.offset), beta, ws(), s);
    fc_->backward_data(dlogits_.get(), param(fc_w.offset), dpooled_.get(), ws(), s);
  }
  const ConvBn& last = blocks_.back().c3;
  {
    RegionTimer::Scope t(timer_, "bwd avgpool", s);
    avgpool_backward(PoolShape{n_, last.conv->out_h(), last.conv->out_w(), 2048, dtype_},
                     dpooled_.get(), dgrad_[0].get(), s);
  }
  // Activation gradients: d_out (the block output's), d_in (the block input's) swap
  // roles from block to block; tmp and tmp_ds are scratch.
  void* d_out = dgrad_[0].get();
  void* d_in = dgrad_[1].get();
  void* tmp = dgrad_[2].get();
  void* tmp_ds = dgrad_[3].get();
  for (auto it = blocks_.rbegin(); it != blocks_.rend(); ++it) {
    Bottleneck& b = *it;
    // out = relu(bn3(conv3) + shortcut): the shortcut's gradient goes to d_in
    // directly (identity) or through the downsample branch.
    conv_bn_backward_bn(b.c3, d_out, b.down ? tmp_ds : d_in, accumulate);
    if (b.down) {
      conv_bn_backward_bn(*b.down, tmp_ds, nullptr, accumulate);
      RegionTimer::Scope t(timer_, b.down->bwd_conv, s);
      b.down->conv->backward_filter(h, b.input, tmp_ds, grad(b.down->w_off), beta, ws(),
                                    ws_bytes());
      b.down->conv->backward_data(h, tmp_ds, param(b.down->w_off), d_in, 0.0f, ws(), ws_bytes());
    }
    {
      RegionTimer::Scope t(timer_, b.c3.bwd_conv, s);
      b.c3.conv->backward_filter(h, b.c2.y.get(), d_out, grad(b.c3.w_off), beta, ws(), ws_bytes());
      b.c3.conv->backward_data(h, d_out, param(b.c3.w_off), tmp, 0.0f, ws(), ws_bytes());
    }
    conv_bn_backward_bn(b.c2, tmp, nullptr, accumulate);
    {
      RegionTimer::Scope t(timer_, b.c2.bwd_conv, s);
      b.c2.conv->backward_filter(h, b.c1.y.get(), tmp, grad(b.c2.w_off), beta, ws(), ws_bytes());
      b.c2.conv->backward_data(h, tmp, param(b.c2.w_off), d_out, 0.0f, ws(), ws_bytes());
    }
    conv_bn_backward_bn(b.c1, d_out, nullptr, accumulate);
    {
      RegionTimer::Scope t(timer_, b.c1.bwd_conv, s);
      b.c1.conv->backward_filter(h, b.input, d_out, grad(b.c1.w_off), beta, ws(), ws_bytes());
      // Adds to the shortcut's gradient already in d_in.
      b.c1.conv->backward_data(h, d_out, param(b.c1.w_off), d_in, 1.0f, ws(), ws_bytes());
    }
    std::swap(d_out, d_in);
  }
  // d_out now holds the gradient of the max pool's output.
  {
    RegionTimer::Scope t(timer_, "bwd maxpool", s);
    maxpool_backward(PoolShape{n_, stem_.conv->out_h(), stem_.conv->out_w(), 64, dtype_}, d_out,
                     argmax_.as<uint8_t>(), d_in, s);
  }
  conv_bn_backward_bn(stem_, d_in, nullptr, accumulate);
  RegionTimer::Scope t(timer_, stem_.bwd_conv, s);
  stem_.conv->backward_filter(h, input_.get(), d_in, grad(stem_.w_off), beta, ws(), ws_bytes());
}

void ResNet50::optimizer_step(int micro_steps) {
  if (!train_) throw UsageError("optimizer_step on a model built for inference");
  if (micro_steps < 1) throw UsageError("optimizer_step needs at least one micro-step");
  cudaStream_t s = stream_.get();
  RegionTimer::Scope t(timer_, "sgd", s);
  const bool fp16 = config_.precision == Precision::kFp16;
  LossScaleState* scaler = scaler_.as<LossScaleState>();
  if (fp16) check_finite(grads_.get(), layout_.total(), dtype_, scaler, s);
  SgdArgs a;
  a.n = layout_.total();
  a.n_decay = layout_.decay_end();
  a.grad_dtype = dtype_;
  a.master = master_.as<float>();
  a.momentum = momentum_.as<float>();
  a.grads = grads_.get();
  a.model = dtype_ == DType::kF32 ? nullptr : model_copy_.get();
  a.lr = kBaseLr * float(n_) * float(micro_steps) / 256.0f;
  a.momentum_factor = kMomentum;
  a.weight_decay = kWeightDecay;
  a.micro_steps = micro_steps;
  a.scaler = fp16 ? scaler : nullptr;
  sgd_step(a, s);
  if (fp16) update_loss_scale(scaler, s);
}

double ResNet50::loss() {
  float v = 0.0f;
  GPUVS_CUDA_CHECK(cudaMemcpyAsync(&v, loss_.get(), 4, cudaMemcpyDeviceToHost, stream_.get()));
  stream_.synchronize();
  return v;
}

}  // namespace gpuvs::models::resnet50
