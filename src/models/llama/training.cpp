// The Llama decoder's training (training.h): parameters in flat arrays (FP32 master,
// bf16 working copy, FP32 gradients, AdamW moments), every layer's activations in one
// buffer each, cuBLASLt for every projection (BERT's Gemm wrapper), the kernels of
// train_kernels.h, kernels.h and bert/kernels.h for the rest.
#include "models/llama/training.h"

#include <fmt/format.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/units.h"
#include "gpu/check.h"
#include "gpu/device.h"
#include "models/bert/kernels.h"
#include "models/config.h"
#include "models/llama/shapes.h"
#include "models/llama/train_kernels.h"
#include "models/llama/training_model.h"

namespace gpuvs::models {

namespace llama {
namespace training_detail {

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
  constexpr size_t kUnplaced = ~size_t{0};
  struct LayerAt {  // byte offsets
    size_t x = kUnplaced, h1 = kUnplaced, rstd1 = kUnplaced, q = kUnplaced, k = kUnplaced,
           v = kUnplaced, lse = kUnplaced, ctx = kUnplaced, mid = kUnplaced, h2 = kUnplaced,
           rstd2 = kUnplaced, gu = kUnplaced, a = kUnplaced;
  };
  // What the backward recomputes lives once, in a piece every layer shares; the rest
  // once per layer.
  const Recompute rc = config_.recompute;
  const bool full = rc == Recompute::kFull, elementwise = rc != Recompute::kNone;
  LayerAt shared;
  auto place = [&](size_t& shared_at, size_t bytes, bool recomputed) {
    if (!recomputed) return la.add(bytes);
    if (shared_at == kUnplaced) shared_at = la.add(bytes);
    return shared_at;
  };
  std::vector<LayerAt> at(size_t(shape_.layers));
  for (LayerAt& o : at) {
    o.x = la.add(size_t(n_ * c_) * es);
    o.h1 = place(shared.h1, size_t(n_ * c_) * es, elementwise);
    o.rstd1 = place(shared.rstd1, size_t(n_) * 4, full);
    o.q = place(shared.q, size_t(n_ * qd_) * es, full);
    o.k = place(shared.k, size_t(n_ * kv_) * es, full);
    o.v = place(shared.v, size_t(n_ * kv_) * es, full);
    o.lse = place(shared.lse, size_t(bht) * 4, full);
    o.ctx = place(shared.ctx, size_t(n_ * qd_) * es, full);
    o.mid = place(shared.mid, size_t(n_ * c_) * es, full);
    o.h2 = place(shared.h2, size_t(n_ * c_) * es, elementwise);
    o.rstd2 = place(shared.rstd2, size_t(n_) * 4, full);
    o.gu = place(shared.gu, size_t(n_ * 2 * f_) * es, full);
    o.a = place(shared.a, size_t(n_ * f_) * es, elementwise);
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

  choose_attention();
  const bool own_attention = !sdpa_;
  Carver w;
  const size_t ids_at = w.add(size_t(n_) * 4), labels_at = w.add(size_t(n_) * 4);
  const size_t freq_at = w.add(size_t(shape_.head_dim() / 2) * 4);
  const size_t x_out_at = w.add(size_t(n_ * c_) * es), hf_at = w.add(size_t(n_ * c_) * es);
  const size_t rstd_at = w.add(size_t(n_) * 4);
  const size_t logits_at = w.add(size_t(n_ * v_) * es);
  const size_t row_loss_at = w.add(size_t(n_) * 4), count_at = w.add(4), loss_at = w.add(12);
  const size_t qkv_at = w.add(size_t(n_ * width_) * es);
  const size_t o_heads_at = w.add(own_attention ? size_t(n_ * qd_) * es : 0);
  const size_t dq_at = w.add(size_t(n_ * qd_) * es), dk_at = w.add(size_t(n_ * kv_) * es),
               dv_at = w.add(size_t(n_ * kv_) * es);
  const size_t ds_at = w.add(size_t(n_ * c_) * es), dh_at = w.add(size_t(n_ * c_) * es);
  const size_t dctx_at = w.add(size_t(n_ * qd_) * es), da_at = w.add(size_t(n_ * f_) * es);
  const size_t delta_at = w.add(own_attention ? size_t(bht) * 4 : 0);
  const size_t sdpa_at = w.add(sdpa_ ? sdpa_->workspace_bytes() : 0);
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
  sdpa_ws_ = wb + sdpa_at;
  partials_ = reinterpret_cast<float*>(wb + part_at);
  ws_ = wb + ws_at;

  // Per projection: input and output widths, whether the residual is added in the
  // epilogue, its name.
  const int64_t dims[kProjCount][2] = {{c_, width_}, {qd_, c_}, {c_, 2 * f_}, {f_, c_}};
  const bool residual[kProjCount] = {false, true, false, true};
  const char* names[kProjCount] = {"qkv", "attention output", "gate and up", "down"};
  fp8_ = config_.precision == Precision::kFp8;
  if (fp8_) {
    constexpr int kPer = bert::Fp8Linear::kMetasPerLayer;
    fp8_metas_ = bert::fp8_linear_metas(kProjCount * shape_.layers);
    std::vector<bert::Fp8ScaleJob> jobs;
    for (int p = 0; p < kProjCount; ++p) {
      fp8_lin_[p] = std::make_unique<bert::Fp8Linear>(
          lt_, n_, dims[p][0], dims[p][1], shape_.layers, true,
          fp8_metas_.as<bert::Fp8Meta>() + p * shape_.layers * kPer, names[p],
          bert::Fp8Epilogue{false, residual[p]});
      for (size_t l = 0; l < size_t(shape_.layers); ++l)
        if (const auto job = fp8_lin_[p]->weight_scale_job(
                int(l), master_.as<float>() + weight_offset(Proj(p), l)))
          jobs.push_back(*job);
    }
    fp8_weight_scales_ = bert::Fp8ScaleBatch(jobs);
  } else {
    for (int p = 0; p < kProjCount; ++p)
      proj_[p] =
          std::make_unique<Projection>(lt_, n_, dims[p][0], dims[p][1], residual[p], names[p]);
  }
  // The LM head stays bf16 in fp8 runs, as torchtitan's Float8 training leaves its
  // output layer: its gradient over 128256 logits is the least suited to one scale.
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
  fp8_weights_stale_ = fp8_;  // the FP8 weights are cast before the first step
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
  if (fp8_) calibrate_fp8();
}

void LlamaTraining::choose_attention() {
  const AttentionKernel want = config_.attention_kernel;
  // auto: cuDNN's backward adds dq through atomics, so a deterministic run keeps gpuvs's.
  if (want == AttentionKernel::kGpuvs ||
      (want == AttentionKernel::kAuto && config_.deterministic)) {
    attention_kernel_ = want == AttentionKernel::kGpuvs ? "gpuvs" : "gpuvs (deterministic)";
    return;
  }
  SdpaShape sh;
  sh.batch = b_;
  sh.heads = shape_.heads;
  sh.kv_heads = shape_.kv_heads;
  sh.seq = t_;
  sh.head_dim = shape_.head_dim();
  sh.scale = float(1.0 / std::sqrt(double(shape_.head_dim())));
  sh.causal = true;
  sh.o_tokens = true;  // the output projection reads ctx (N, H*D) and writes d_ctx so
  try {
    sdpa_ = std::make_unique<CudnnSdpa>(sh, true);
    attention_kernel_ = sdpa_->describe();
  } catch (const OutOfMemoryError&) {
    throw;
  } catch (const Error& e) {
    if (want == AttentionKernel::kCudnn)
      throw UsageError(fmt::format("--attention cudnn: {}", e.what()));
    attention_kernel_ = fmt::format("gpuvs ({})", e.what());
  }
}

int64_t LlamaTraining::weight_offset(Proj p, size_t l) const {
  const LayerParams& o = layout_.layers[l];
  switch (p) {
    case Proj::kQkv:
      return o.wqkv;
    case Proj::kO:
      return o.wo;
    case Proj::kGu:
      return o.wgu;
    case Proj::kDown:
      break;
  }
  return o.wdown;
}

void LlamaTraining::cast_fp8_weights() {
  const cudaStream_t s = stream_.get();
  fp8_weight_scales_.run(s);
  for (int p = 0; p < kProjCount; ++p)
    for (size_t l = 0; l < layers_.size(); ++l)
      fp8_lin_[p]->cast_weight(int(l), master_.as<float>() + weight_offset(Proj(p), l), s);
}

// Two steps on the synthetic batch fill the amax histories (the first step's
// activations and gradients are cast with scale 1, the second one's are scaled); then
// the state of a fresh model: zero gradients, no loss, AdamW untouched.
void LlamaTraining::calibrate_fp8() {
  for (int i = 0; i < 2; ++i)
    forward_backward(false);
  const cudaStream_t s = stream_.get();
  GPUVS_CUDA_CHECK(cudaMemsetAsync(grads_.get(), 0, grads_.bytes(), s));
  GPUVS_CUDA_CHECK(cudaMemsetAsync(loss_, 0, 12, s));
  stream_.synchronize();
}

std::string LlamaTraining::fp8_plan() const {
  if (!fp8_) return {};
  std::string out;
  for (const auto& f : fp8_lin_)
    out += f->plan() + "\n";
  return out + "lm head: bf16 (kept so in fp8 runs)\n";
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
  fp8_weights_stale_ = fp8_;  // cast before the next step
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

}  // namespace training_detail
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
  if (c.precision != Precision::kBf16 && c.precision != Precision::kFp8)
    throw UsageError(
        fmt::format("llama training: --precision {} is not built; bf16 and fp8 are (the attention "
                    "kernels are 16-bit)",
                    to_string(c.precision)));
  if (c.batch < 1) throw UsageError(fmt::format("llama: batch {} (at least 1)", c.batch));
  if (c.seq < 64 || c.seq % 64 != 0 || c.seq > shape->max_context)
    throw UsageError(fmt::format("llama: --seq {}: a multiple of 64 up to {}'s context of {}",
                                 c.seq, shape->name, shape->max_context));
  if (!bert::flash_attention_supported(DType::kBF16, c.seq, shape->head_dim()))
    throw UsageError(
        fmt::format("llama: the attention kernels do not take head size {}", shape->head_dim()));
  DeviceScope scope(device);
  if (c.precision == Precision::kFp8) {
    int major = 0, minor = 0;
    GPUVS_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    GPUVS_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
    if (const auto why = fp8_refusal(major, minor)) throw UsageError("llama training: " + *why);
  }
  const auto [free_b, total_b] = device_memory_info();
  // FP32 master, m, v and gradient and the bf16 copy: 18 bytes a parameter; then what
  // one sequence keeps: per layer and token the bf16 activations of LayerActs (the
  // input, two norms, the mid-point, Q, K, V, the context, gate and up, SwiGLU), its
  // logits and its share of the scratch.
  // fp8 adds each projection's weight twice in E4M3 (W and W^T) and, per layer and
  // token, the E4M3 copies of the projections' inputs the weight gradients read, plus
  // one layer's E4M3 inputs and E5M2 gradients of scratch.
  const llama::Shape& sh = *shape;
  const bool fp8 = c.precision == Precision::kFp8;
  const double qd = double(sh.heads) * sh.head_dim(), kv = sh.kv_dim();
  const double h = sh.hidden, f = sh.intermediate;
  const double layer_weights = sh.layers * h * (qd + 2 * kv + qd + 3 * f);
  const double states = 18.0 * double(llama::parameter_count(sh)) + (fp8 ? 2 * layer_weights : 0);
  const double fp8_inputs = 2 * h + qd + f, fp8_grads = qd + 2 * kv + h + 2 * f + h;
  // --recompute keeps less per layer and one layer's worth of what it recomputes.
  const double all = 4.0 * h + 2 * qd + 2 * kv + 3.0 * f;
  double kept = all, shared = 0;
  if (c.recompute == Recompute::kSelective) {
    kept = all - (2 * h + f);
    shared = 2 * h + f;
  } else if (c.recompute == Recompute::kFull) {
    kept = h;
    shared = all - h;
  }
  const double per_token = 2.0 * (sh.layers * kept + shared + sh.vocab + all) +
                           (fp8 ? sh.layers * fp8_inputs + fp8_inputs + 2 * fp8_grads : 0);
  const double one_sequence = per_token * c.seq;
  if (states + one_sequence > double(free_b))
    throw OutOfMemoryError(fmt::format(
        "{} does not train on one GPU with this memory: its weights, gradients and AdamW "
        "state take {} (18 bytes a parameter: FP32 master, moments and gradient, the bf16 "
        "copy{}) and one sequence of {} tokens {} more, where GPU {} has {} free; gpuvs advise "
        "lays out a run that shards them over GPUs",
        sh.name, format_si(states, "B"), fp8 ? "; the E4M3 weights twice" : "", c.seq,
        format_si(one_sequence, "B"), device, format_si(double(free_b), "B")));
  return std::make_unique<llama::training_detail::LlamaTraining>(c, *shape, device);
}

}  // namespace gpuvs::models
