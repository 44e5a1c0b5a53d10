// ResNet-50 construction: layers, memory, algorithm search, initial state, and the
// tensors exchanged with PyTorch. The steps are in resnet50_steps.cpp.
#include "models/resnet50/resnet50.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "gpu/check.h"
#include "models/layers/pooling.h"
#include "models/layers/tensor_ops.h"

namespace gpuvs::models::resnet50 {

namespace {

DType storage_type(Precision p) {
  switch (p) {
    case Precision::kFp16:
      return DType::kF16;
    case Precision::kBf16:
      return DType::kBF16;
    default:
      return DType::kF32;
  }
}

const ModelConfig& checked(const ModelConfig& c, int device) {
  if (c.batch < 1) throw UsageError(fmt::format("batch must be at least 1, not {}", c.batch));
  if (c.precision == Precision::kFp8)
    throw UsageError("fp8 is for BERT-large and Llama: ResNet-50 runs fp32, tf32, fp16 or bf16");
  // cuDNN's legacy API indexes a tensor with 32-bit integers: the stem's output
  // (N, 112, 112, 64) must stay below 2^31 elements. A larger batch would not fit in
  // any GPU's memory today anyway, so it reads as out-of-memory to the batch search.
  if (int64_t(c.batch) * 112 * 112 * 64 >= (int64_t(1) << 31))
    throw OutOfMemoryError(
        fmt::format("batch {} is too large for ResNet-50 here: the stem's output would exceed 2^31 "
                    "elements (cuDNN's limit)",
                    c.batch));
  GPUVS_CUDA_CHECK(cudaSetDevice(device));
  return c;
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

ResNet50::ResNet50(const ModelConfig& config, int device)
    : config_(checked(config, device)),
      dtype_(storage_type(config.precision)),
      train_(config.mode == Mode::kTrain),
      n_(config.batch) {
  GPUVS_CUDNN_CHECK_OOM(cudnnSetStream(cudnn_.get(), stream_.get()));
  in_c_ = probe_input_channels();
  build_layers();
  allocate();
  select_algorithms();
  upload_initial_state();
}

ResNet50::~ResNet50() = default;

ConvBn ResNet50::make_conv_bn(const std::string& conv_name, const std::string& bn_name, int in_c,
                              int h, int w, int out_c, int r, int stride, int pad, bool relu,
                              int c_stored) {
  ConvBn l;
  l.conv_name = conv_name;
  l.bn_name = bn_name;
  Conv2d::Params p;
  p.n = n_;
  p.c = c_stored;
  p.h = h;
  p.w = w;
  p.k = out_c;
  p.r = r;
  p.stride = stride;
  p.pad = pad;
  p.dtype = dtype_;
  p.tensor_ops = config_.precision != Precision::kFp32;
  p.need_dgrad = conv_name != "conv1";
  p.train = train_;
  p.autotune = timed_search();
  p.deterministic = deterministic_algorithms();
  l.conv = std::make_unique<Conv2d>(p);
  l.w_entry = layout_.add_conv(conv_name, out_c, in_c, r, c_stored);
  l.bn_entry = layout_.add_bn(bn_name, out_c);
  l.bn = BnShape{int64_t(n_) * l.conv->out_h() * l.conv->out_w(), out_c, dtype_};
  l.relu = relu;
  l.fwd_conv = "fwd " + conv_name;
  l.bwd_conv = "bwd " + conv_name;
  l.fwd_bn = "fwd " + bn_name + (relu ? "+relu" : "");
  l.bwd_bn = "bwd " + bn_name + (relu ? "+relu" : "");
  return l;
}

int ResNet50::probe_input_channels() {
  for (int c : kInputChannelChoices) {
    Conv2d::Params p;
    p.n = n_;
    p.c = c;
    p.h = kImage;
    p.w = kImage;
    p.k = 64;
    p.r = 7;
    p.stride = 2;
    p.pad = 3;
    p.dtype = dtype_;
    p.tensor_ops = config_.precision != Precision::kFp32;
    p.need_dgrad = false;
    p.train = train_;
    p.autotune = false;  // heuristics only: nothing runs, no buffers needed
    p.deterministic = deterministic_algorithms();
    try {
      Conv2d conv(p);
      ConvAlgoCache cache;
      conv.select_algorithms(cudnn_.get(), cache, nullptr, nullptr, nullptr, nullptr, nullptr,
                             nullptr, size_t(1) << 30);
      return c;
    } catch (const OutOfMemoryError&) {
      throw;
    } catch (const Error&) {
      // no algorithm for this channel count: try the next
    }
  }
  return kInputChannelChoices[1];
}

void ResNet50::build_layers() {
  stem_ = make_conv_bn("conv1", "bn1", 3, kImage, kImage, 64, 7, 2, 3, true, in_c_);
  int h = maxpool_out(stem_.conv->out_h());
  int in_c = 64;
  constexpr int kWidths[4] = {64, 128, 256, 512};
  constexpr int kBlocks[4] = {3, 4, 6, 3};
  for (int li = 0; li < 4; ++li) {
    for (int bi = 0; bi < kBlocks[li]; ++bi) {
      const int stride = (bi == 0 && li > 0) ? 2 : 1;
      const int w = kWidths[li], out = 4 * w;
      const std::string pre = fmt::format("layer{}.{}", li + 1, bi);
      Bottleneck b;
      b.c1 = make_conv_bn(pre + ".conv1", pre + ".bn1", in_c, h, h, w, 1, 1, 0, true, in_c);
      b.c2 = make_conv_bn(pre + ".conv2", pre + ".bn2", w, h, h, w, 3, stride, 1, true, w);
      const int h2 = b.c2.conv->out_h();
      b.c3 = make_conv_bn(pre + ".conv3", pre + ".bn3", w, h2, h2, out, 1, 1, 0, true, w);
      b.c3.residual = true;
      b.c3.fwd_bn = "fwd " + pre + ".bn3+add+relu";
      b.c3.bwd_bn = "bwd " + pre + ".bn3+add+relu";
      if (bi == 0)
        b.down = make_conv_bn(pre + ".downsample.0", pre + ".downsample.1", in_c, h, h, out, 1,
                              stride, 0, false, in_c);
      blocks_.push_back(std::move(b));
      in_c = out;
      h = h2;
    }
  }
  fc_entry_ = layout_.add_fc("fc", kClasses, 2048);
  FullyConnected::Params fp;
  fp.n = n_;
  fp.in = 2048;
  fp.out = kClasses;
  fp.dtype = dtype_;
  fp.tf32 = config_.precision == Precision::kTf32;
  fp.train = train_;
  fc_ = std::make_unique<FullyConnected>(fp);
  layout_.finish();

  const auto resolve = [&](ConvBn& l) {
    l.w_off = layout_.at(l.w_entry).offset;
    l.gamma_off = layout_.at(l.bn_entry).offset;
    l.beta_off = layout_.at(l.bn_entry + 1).offset;
    l.run_off = layout_.find_buffer(l.bn_name)->offset;
    l.save_off = 2 * l.run_off;
  };
  resolve(stem_);
  for (auto& b : blocks_) {
    resolve(b.c1);
    resolve(b.c2);
    resolve(b.c3);
    if (b.down) resolve(*b.down);
  }

  // FLOPs: forward; training adds backward filter and backward data (none for conv1).
  const auto conv_flops = [&](const ConvBn& l, double real_fraction) {
    const double f = l.conv->forward_flops() * real_fraction;
    if (!train_) return f;
    return f * (l.conv->params().need_dgrad ? 3.0 : 2.0);
  };
  flops_ = conv_flops(stem_, 3.0 / in_c_);
  for (const auto& b : blocks_) {
    flops_ += conv_flops(b.c1, 1.0) + conv_flops(b.c2, 1.0) + conv_flops(b.c3, 1.0);
    if (b.down) flops_ += conv_flops(*b.down, 1.0);
  }
  flops_ += fc_->forward_flops() * (train_ ? 3.0 : 1.0);
}

void ResNet50::allocate() {
  const size_t es = dtype_size(dtype_);
  int64_t partials = 0;
  int c_max = 0;
  const auto alloc_layer = [&](ConvBn& l) {
    l.x = DeviceBuffer(size_t(l.bn.m) * l.bn.c * es);
    l.y = DeviceBuffer(size_t(l.bn.m) * l.bn.c * es);
    partials = std::max(partials, bn_partials_floats(l.bn));
    c_max = std::max(c_max, l.bn.c);
  };
  alloc_layer(stem_);
  for (auto& b : blocks_) {
    alloc_layer(b.c1);
    alloc_layer(b.c2);
    alloc_layer(b.c3);
    if (b.down) alloc_layer(*b.down);
  }
  const int64_t total = layout_.total();
  master_ = DeviceBuffer(size_t(total) * 4);
  if (dtype_ != DType::kF32) model_copy_ = DeviceBuffer(size_t(total) * es);
  running_ = DeviceBuffer(size_t(layout_.buffer_total()) * 4);
  saved_ = DeviceBuffer(size_t(layout_.buffer_total()) * 2 * 4);
  bn_scratch_ = DeviceBuffer(size_t(3) * c_max * 4);
  partials_ = DeviceBuffer(size_t(partials) * 4);

  const int p = maxpool_out(stem_.conv->out_h());
  input_ = DeviceBuffer(size_t(n_) * kImage * kImage * in_c_ * es);
  labels_ = DeviceBuffer(size_t(n_) * 4);
  pool_out_ = DeviceBuffer(size_t(n_) * p * p * 64 * es);
  pooled_ = DeviceBuffer(size_t(n_) * 2048 * es);
  logits_ = DeviceBuffer(size_t(n_) * kClasses * 4);
  row_loss_ = DeviceBuffer(size_t(n_) * 4);
  loss_ = DeviceBuffer(4);
  scaler_ = DeviceBuffer(sizeof(LossScaleState));
  // The largest activation: the stem's output (N, 112, 112, 64).
  scratch_elems_ = stem_.bn.m * stem_.bn.c;
  if (train_) {
    grads_ = DeviceBuffer(size_t(total) * es);
    momentum_ = DeviceBuffer(size_t(total) * 4);
    argmax_ = DeviceBuffer(size_t(n_) * p * p * 64);
    dlogits_ = DeviceBuffer(size_t(n_) * kClasses * es);
    dpooled_ = DeviceBuffer(size_t(n_) * 2048 * es);
    for (int i = 0; i < 4; ++i)
      dgrad_.emplace_back(size_t(scratch_elems_) * es);
  }
  blocks_[0].input = pool_out_.get();
  for (size_t i = 1; i < blocks_.size(); ++i)
    blocks_[i].input = blocks_[i - 1].c3.y.get();
}

void ResNet50::select_algorithms() {
  // The search workspace: as large as memory allows, up to 4 GiB for FP32 data (fp32,
  // tf32) and 1 GiB for 16-bit data; the final one is the largest the chosen
  // algorithms need. fp32's fast NHWC algorithms need over 1 GiB at batch 256 on an
  // H200: with a 1 GiB cap, two 1x1 convolutions fell back to a backward-data algorithm
  // 40x slower (fp32 training 478 -> 831 img/s with 4 GiB). bf16 training measured
  // 7622 img/s with 4 GiB and 7555 (power-capped) with 1 GiB: within the noise, so
  // 16-bit data keeps the smaller search.
  // Without timing nothing runs: the heuristic's algorithms may take up to 256 MiB in
  // the largest-batch search (its candidates must stay small and fast), up to 4 GiB in
  // deterministic mode (fp32 has no deterministic NHWC backward-data algorithm below
  // that for some layers).
  const size_t search_cap_mib = dtype_ == DType::kF32 ? 4096 : 1024;
  const size_t heuristic_cap = deterministic_algorithms() ? size_t(4096) << 20 : size_t(256) << 20;
  DeviceBuffer search;
  if (timed_search()) {
    for (size_t mib : {size_t(4096), size_t(2048), size_t(1024), size_t(512), size_t(256),
                       size_t(64), size_t(16)}) {
      if (mib > search_cap_mib) continue;
      if (auto b = DeviceBuffer::try_allocate(mib << 20)) {
        search = std::move(*b);
        break;
      }
    }
  }
  const size_t search_bytes = timed_search() ? search.bytes() : heuristic_cap;
  // The search runs real convolutions on the model's own buffers (dx and dw only
  // when training).
  void* dx = train_ ? dgrad_[0].get() : nullptr;
  ConvAlgoCache cache;
  size_t need = FullyConnected::kWorkspaceBytes;
  const auto select = [&](ConvBn& l, const void* in) {
    l.conv->select_algorithms(cudnn_.get(), cache, const_cast<void*>(in), param(l.w_off), l.x.get(),
                              dx, train_ ? grad(l.w_off) : nullptr, search.get(), search_bytes);
    need = std::max(need, l.conv->workspace_bytes());
  };
  select(stem_, input_.get());
  for (auto& b : blocks_) {
    select(b.c1, b.input);
    select(b.c2, b.c1.y.get());
    select(b.c3, b.c2.y.get());
    if (b.down) select(*b.down, b.input);
  }
  search = DeviceBuffer();
  workspace_ = DeviceBuffer(need);
}

std::string ResNet50::algorithm_search() const {
  if (config_.deterministic) return "cuDNN heuristic order, deterministic algorithms (untimed)";
  if (deterministic_algorithms())
    return fmt::format("cuDNN heuristic order, deterministic algorithms (untimed; batch above {})",
                       kFullSearchMaxBatch);
  if (!config_.autotune) return "cuDNN heuristic order (untimed)";
  return "every cuDNN algorithm timed (cudnnFind)";
}

void ResNet50::upload_initial_state() {
  cudaStream_t s = stream_.get();
  const auto params = layout_.init_params(config_.seed);
  GPUVS_CUDA_CHECK(
      cudaMemcpyAsync(master_.get(), params.data(), params.size() * 4, cudaMemcpyHostToDevice, s));
  if (dtype_ != DType::kF32)
    cast_from_float(master_.as<float>(), model_copy_.get(), layout_.total(), dtype_, s);
  const auto buffers = layout_.init_buffers();
  GPUVS_CUDA_CHECK(cudaMemcpyAsync(running_.get(), buffers.data(), buffers.size() * 4,
                                   cudaMemcpyHostToDevice, s));
  GPUVS_CUDA_CHECK(cudaMemsetAsync(saved_.get(), 0, saved_.bytes(), s));
  const LossScaleState scaler{config_.precision == Precision::kFp16 ? kInitialLossScale : 1.0f, 0,
                              0};
  GPUVS_CUDA_CHECK(
      cudaMemcpyAsync(scaler_.get(), &scaler, sizeof(scaler), cudaMemcpyHostToDevice, s));
  if (train_) {
    // The algorithm search wrote into the gradients; the padding between tensors
    // must stay zero for the overflow check and the update.
    GPUVS_CUDA_CHECK(cudaMemsetAsync(grads_.get(), 0, grads_.bytes(), s));
    GPUVS_CUDA_CHECK(cudaMemsetAsync(momentum_.get(), 0, momentum_.bytes(), s));
  }
  GPUVS_CUDA_CHECK(cudaMemsetAsync(logits_.get(), 0, logits_.bytes(), s));
  GPUVS_CUDA_CHECK(cudaMemsetAsync(loss_.get(), 0, loss_.bytes(), s));
  generate_input(config_.seed);
  stream_.synchronize();
}

void* ResNet50::param(int64_t off) const {
  if (dtype_ == DType::kF32) return master_.as<float>() + off;
  return static_cast<char*>(model_copy_.get()) + size_t(off) * dtype_size(dtype_);
}

void* ResNet50::grad(int64_t off) const {
  return static_cast<char*>(grads_.get()) + size_t(off) * dtype_size(dtype_);
}

std::vector<std::string> ResNet50::parameter_names() const {
  std::vector<std::string> names;
  for (const auto& e : layout_.entries())
    names.push_back(e.name);
  return names;
}

void ResNet50::set_tensor(const std::string& name, const HostTensor& t) {
  cudaStream_t s = stream_.get();
  if (t.numel() != static_cast<int64_t>(t.data.size()))
    throw Error(
        fmt::format("tensor {}: {} values for its shape of {}", name, t.data.size(), t.numel()));
  if (name == "input") {
    if (t.shape != std::vector<int64_t>{n_, 3, kImage, kImage})
      throw Error(fmt::format("input: shape ({}, 3, {}, {}) expected", n_, kImage, kImage));
    std::vector<float> nhwc(size_t(n_) * kImage * kImage * in_c_, 0.0f);
    for (int n = 0; n < n_; ++n)
      for (int c = 0; c < 3; ++c)
        for (int p = 0; p < kImage * kImage; ++p)
          nhwc[(size_t(n) * kImage * kImage + p) * in_c_ + c] =
              t.data[(size_t(n) * 3 + c) * kImage * kImage + p];
    DeviceBuffer tmp(nhwc.size() * 4);
    GPUVS_CUDA_CHECK(
        cudaMemcpyAsync(tmp.get(), nhwc.data(), nhwc.size() * 4, cudaMemcpyHostToDevice, s));
    if (dtype_ == DType::kF32)
      GPUVS_CUDA_CHECK(
          cudaMemcpyAsync(input_.get(), tmp.get(), tmp.bytes(), cudaMemcpyDeviceToDevice, s));
    else
      cast_from_float(tmp.as<float>(), input_.get(), int64_t(nhwc.size()), dtype_, s);
    stream_.synchronize();
    return;
  }
  if (name == "labels") {
    if (t.shape != std::vector<int64_t>{n_})
      throw Error(fmt::format("labels: shape ({}) expected", n_));
    std::vector<int32_t> labels(t.data.size());
    for (size_t i = 0; i < labels.size(); ++i) {
      labels[i] = static_cast<int32_t>(t.data[i]);
      if (labels[i] < 0 || labels[i] >= kClasses)
        throw Error(fmt::format("labels: {} is not a class in [0, {})", t.data[i], kClasses));
    }
    GPUVS_CUDA_CHECK(cudaMemcpyAsync(labels_.get(), labels.data(), labels.size() * 4,
                                     cudaMemcpyHostToDevice, s));
    stream_.synchronize();
    return;
  }
  if (const ParamEntry* e = layout_.find(name)) {
    const auto stored = layout_.to_stored(*e, t);
    GPUVS_CUDA_CHECK(cudaMemcpyAsync(master(e->offset), stored.data(), stored.size() * 4,
                                     cudaMemcpyHostToDevice, s));
    if (dtype_ != DType::kF32)
      cast_from_float(master(e->offset), param(e->offset), e->count, dtype_, s);
    stream_.synchronize();
    return;
  }
  if (ends_with(name, ".num_batches_tracked")) return;  // PyTorch's counter: not used here
  for (const char* tail : {".running_mean", ".running_var"}) {
    if (!ends_with(name, tail)) continue;
    const BufferEntry* b = layout_.find_buffer(name.substr(0, name.size() - std::strlen(tail)));
    if (!b) break;
    if (t.shape != std::vector<int64_t>{b->c})
      throw Error(fmt::format("{}: shape ({}) expected", name, b->c));
    const int64_t off = b->offset + (std::strcmp(tail, ".running_var") == 0 ? b->c : 0);
    GPUVS_CUDA_CHECK(cudaMemcpyAsync(running_.as<float>() + off, t.data.data(), t.data.size() * 4,
                                     cudaMemcpyHostToDevice, s));
    stream_.synchronize();
    return;
  }
  throw Error(fmt::format("resnet50 has no tensor named '{}'", name));
}

HostTensor ResNet50::get_tensor(const std::string& name) {
  cudaStream_t s = stream_.get();
  const auto download = [&](const void* src, size_t count) {
    std::vector<float> v(count);
    GPUVS_CUDA_CHECK(cudaMemcpyAsync(v.data(), src, count * 4, cudaMemcpyDeviceToHost, s));
    stream_.synchronize();
    return v;
  };
  if (name == "logits")
    return HostTensor{{n_, kClasses}, download(logits_.get(), size_t(n_) * kClasses)};
  if (name == "loss") return HostTensor{{}, download(loss_.get(), 1)};
  if (name.rfind("grad/", 0) == 0) {
    if (!train_) throw Error("gradients exist only in a model built for training");
    const ParamEntry* e = layout_.find(name.substr(5));
    if (!e) throw Error(fmt::format("resnet50 has no parameter named '{}'", name.substr(5)));
    DeviceBuffer tmp(size_t(e->count) * 4);
    cast_to_float(grad(e->offset), tmp.as<float>(), e->count, dtype_, s);
    auto g = download(tmp.get(), size_t(e->count));
    if (config_.precision == Precision::kFp16) {
      // fp16 gradients carry the loss scale of the last forward_backward.
      const float scale = download(scaler_.get(), 1)[0];
      for (float& v : g)
        v /= scale;
    }
    return layout_.from_stored(*e, g);
  }
  if (const ParamEntry* e = layout_.find(name))
    return layout_.from_stored(*e, download(master(e->offset), size_t(e->count)));
  for (const char* tail : {".running_mean", ".running_var"}) {
    if (!ends_with(name, tail)) continue;
    const BufferEntry* b = layout_.find_buffer(name.substr(0, name.size() - std::strlen(tail)));
    if (!b) break;
    const int64_t off = b->offset + (std::strcmp(tail, ".running_var") == 0 ? b->c : 0);
    return HostTensor{{b->c}, download(running_.as<float>() + off, size_t(b->c))};
  }
  throw Error(fmt::format("resnet50 has no tensor named '{}'", name));
}

const ConvBn* ResNet50::find_layer(const std::string& conv_name) const {
  if (stem_.conv_name == conv_name) return &stem_;
  for (const auto& b : blocks_) {
    for (const ConvBn* l : {&b.c1, &b.c2, &b.c3})
      if (l->conv_name == conv_name) return l;
    if (b.down && b.down->conv_name == conv_name) return &*b.down;
  }
  return nullptr;
}

HostTensor ResNet50::debug_tensor(const std::string& name) {
  cudaStream_t s = stream_.get();
  const auto fetch = [&](const void* src, int64_t count, DType t, std::vector<int64_t> shape) {
    DeviceBuffer tmp(size_t(count) * 4);
    cast_to_float(src, tmp.as<float>(), count, t, s);
    HostTensor h{std::move(shape), std::vector<float>(size_t(count))};
    GPUVS_CUDA_CHECK(
        cudaMemcpyAsync(h.data.data(), tmp.get(), size_t(count) * 4, cudaMemcpyDeviceToHost, s));
    stream_.synchronize();
    return h;
  };
  if (name == "dlogits")
    return fetch(dlogits_.get(), int64_t(n_) * kClasses, dtype_, {n_, kClasses});
  if (name == "pooled") return fetch(pooled_.get(), int64_t(n_) * 2048, dtype_, {n_, 2048});
  if (name == "dpooled") return fetch(dpooled_.get(), int64_t(n_) * 2048, dtype_, {n_, 2048});
  for (const char* tail : {".x", ".y"}) {
    if (name.rfind("act/", 0) != 0 || !ends_with(name, tail)) continue;
    const ConvBn* l = find_layer(name.substr(4, name.size() - 6));
    if (!l) break;
    const DeviceBuffer& b = tail[1] == 'x' ? l->x : l->y;
    return fetch(b.get(), l->bn.m * l->bn.c, dtype_, {l->bn.m, l->bn.c});
  }
  if (name.rfind("saved/", 0) == 0) {
    if (const ConvBn* l = find_layer(name.substr(6)))
      return fetch(saved_.as<float>() + l->save_off, 4 * int64_t(l->bn.c), DType::kF32,
                   {4, l->bn.c});
  }
  throw Error(fmt::format("resnet50 has no debug tensor named '{}'", name));
}

}  // namespace gpuvs::models::resnet50
