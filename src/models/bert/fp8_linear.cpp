#include "models/bert/fp8_linear.h"

#include <fmt/format.h>

#include <vector>

#include "core/error.h"
#include "gpu/check.h"

namespace gpuvs::models::bert {

namespace {

// g.run(args...), an error naming layer l.
template <class... Args>
void run_in_layer(Gemm& g, int l, Args... args) {
  try {
    g.run(args...);
  } catch (const Error& e) {
    throw Error(fmt::format("layer {}: {}", l, e.what()));
  }
}

void mark(const Fp8Marks& m, const char* name, cudaStream_t s) {
  if (m.timer != nullptr && name != nullptr) m.timer->mark(name, s);
}

// An FP8 GEMM, or null with `why` set where cuBLASLt runs none for this shape.
std::unique_ptr<Gemm> try_fp8(const LtHandle& handle, const RowMajorGemm& g, std::string& why) {
  try {
    return std::make_unique<Gemm>(handle, g);
  } catch (const Error& e) {
    why = e.what();
    return nullptr;
  }
}

}  // namespace

DeviceBuffer fp8_linear_metas(int layers) {
  std::vector<Fp8Meta> metas;
  for (int i = 0; i < layers; ++i) {
    metas.push_back(fp8_meta_init(false, true));   // x: E4M3, delayed
    metas.push_back(fp8_meta_init(false, false));  // W: E4M3, current
    metas.push_back(fp8_meta_init(true, true));    // dy: E5M2, delayed
  }
  static_assert(Fp8Linear::kMetasPerLayer == 3, "x, W, dy");
  DeviceBuffer out(metas.size() * sizeof(Fp8Meta));
  GPUVS_CUDA_CHECK(cudaMemcpy(out.get(), metas.data(), out.bytes(), cudaMemcpyHostToDevice));
  return out;
}

Fp8Linear::Fp8Linear(const LtHandle& handle, int64_t rows, int64_t in, int64_t out, int layers,
                     bool train, Fp8Meta* metas, const std::string& name,
                     const Fp8Epilogue& epilogue)
    : rows_(rows), in_(in), out_(out), train_(train), metas_(metas), name_(name) {
  // The trial runs' scale pointers: layer 1's, as aligned as every layer's (fp8.h).
  const int tl = layers > 1 ? 1 : 0;
  DenseShape ls;
  ls.rows = rows;
  ls.in = in;
  ls.out = out;
  ls.dtype = DType::kBF16;
  ls.train = train;
  ls.bias = epilogue.bias;
  ls.residual = epilogue.residual;
  bf16_ = std::make_unique<DenseLayer>(handle, ls);

  RowMajorGemm f;  // y (rows, out) = x (rows, in) W (out, in)^T
  f.name = name + " fwd (FP8, every layer)";
  f.a = f.b = GemmElem::kE4M3;
  f.c = GemmElem::kBF16;
  f.fast_accum = true;
  f.tb = true;
  f.m = rows;
  f.n = out;
  f.k = in;
  f.lda = in;
  f.ldb = in;
  f.ldc = out;
  f.bias = epilogue.bias;
  f.accumulate = epilogue.residual;
  f.a_scale = &meta(tl, 0)->scale_inv;
  f.b_scale = &meta(tl, 1)->scale_inv;
  fwd_ = try_fp8(handle, f, fwd_why_);
  if (fwd_) {
    x8_ = DeviceBuffer(size_t(rows) * in);
    w8_ = DeviceBuffer(size_t(layers) * out * in);
  }
  if (!train) return;
  RowMajorGemm d;  // dx (rows, in) = dy (rows, out) (W^T stored (in, out))^T
  d.name = name + " dgrad (FP8, every layer)";
  d.a = GemmElem::kE5M2;
  d.b = GemmElem::kE4M3;
  d.c = GemmElem::kBF16;
  d.tb = true;
  d.m = rows;
  d.n = in;
  d.k = out;
  d.lda = out;
  d.ldb = out;
  d.ldc = in;
  d.accumulate = true;
  d.a_scale = &meta(tl, 2)->scale_inv;
  d.b_scale = &meta(tl, 1)->scale_inv;
  dgrad_ = try_fp8(handle, d, dgrad_why_);
  if (dgrad_) {
    w8t_ = DeviceBuffer(size_t(layers) * in * out);
    dy8_ = DeviceBuffer(size_t(rows) * out);
  }
  RowMajorGemm w;  // dW (out, in) = dy^T (out, rows) (x^T stored (in, rows))^T
  w.name = name + " wgrad (FP8, every layer)";
  w.a = GemmElem::kE5M2;
  w.b = GemmElem::kE4M3;
  w.tb = true;
  w.m = out;
  w.n = in;
  w.k = rows;
  w.lda = rows;
  w.ldb = rows;
  w.ldc = in;
  w.c = GemmElem::kF32;
  w.accumulate = true;
  w.a_scale = &meta(tl, 2)->scale_inv;
  w.b_scale = &meta(tl, 0)->scale_inv;
  std::string why_f32;
  wgrad_ = try_fp8(handle, w, why_f32);
  if (!wgrad_) {  // no FP8 kernel with an FP32 output: bf16, then added
    w.c = GemmElem::kBF16;
    w.accumulate = false;
    wgrad_ = try_fp8(handle, w, wgrad_why_);
    if (wgrad_) {
      wgrad_f32_ = false;
      dw16_ = DeviceBuffer(size_t(out) * in * 2);
    } else {
      wgrad_why_ = why_f32 + "; with a bf16 output: " + wgrad_why_;
    }
  }
  if (wgrad_) {
    x8t_ = DeviceBuffer(size_t(layers) * in * rows);
    dy8t_ = DeviceBuffer(size_t(out) * rows);
  }
}

Fp8Linear::~Fp8Linear() = default;

std::string Fp8Linear::plan() const {
  const auto one = [](const char* what, const Gemm* g, const std::string& why) {
    if (g) return fmt::format("{} FP8 ({})", what, g->plan());
    return fmt::format("{} bf16 (cuBLASLt refused FP8: {})", what, why);
  };
  std::string out = name_ + ": " + one("fwd", fwd_.get(), fwd_why_);
  if (!train_) return out;
  out += "; " + one("dgrad", dgrad_.get(), dgrad_why_);
  out += "; " + one("wgrad", wgrad_.get(), wgrad_why_);
  if (wgrad_ && !wgrad_f32_) out += " (bf16 output, added into the FP32 gradient)";
  return out;
}

std::optional<Fp8ScaleJob> Fp8Linear::weight_scale_job(int l, const float* master) const {
  if (!weight_in_fp8()) return std::nullopt;
  return Fp8ScaleJob{master, out_ * in_, meta(l, 1)};
}

void Fp8Linear::cast_weight(int l, const float* master, cudaStream_t s) {
  if (!weight_in_fp8()) return;
  Fp8CastArgs c;
  c.rows = out_;
  c.cols = in_;
  c.src = master;
  c.src_f32 = true;
  c.out = fwd_ ? w(l) : nullptr;
  c.out_t = train_ && dgrad_ ? w_t(l) : nullptr;
  c.meta = meta(l, 1);
  fp8_cast(c, s);
}

Fp8CastArgs Fp8Linear::input_cast(int l, const void* x) const {
  Fp8CastArgs c;
  c.rows = rows_;
  c.cols = in_;
  c.src = x;
  c.dtype = DType::kBF16;
  c.out = fwd_ ? x8_.as<uint8_t>() : nullptr;
  c.out_t = train_ && wgrad_ ? x_t(l) : nullptr;
  c.meta = meta(l, 0);
  return c;
}

Fp8CastArgs Fp8Linear::grad_cast(int l, const void* dy) const {
  Fp8CastArgs c;
  c.rows = rows_;
  c.cols = out_;
  c.src = dy;
  c.dtype = DType::kBF16;
  c.e5m2 = true;
  c.out = dgrad_ ? dy8_.as<uint8_t>() : nullptr;
  c.out_t = wgrad_ ? dy8t_.as<uint8_t>() : nullptr;
  c.meta = meta(l, 2);
  return c;
}

void Fp8Linear::forward(int l, const void* x, const void* w16, const void* bias, void* y, void* ws,
                        cudaStream_t s, const Fp8Marks& marks, bool x_cast_done,
                        const void* residual) {
  if (!x_cast_done && (fwd_ || (train_ && wgrad_))) {
    mark(marks, marks.cast, s);
    fp8_cast(input_cast(l, x), s);
  }
  mark(marks, marks.gemm, s);
  if (!fwd_) {
    bf16_->forward(x, w16, bias, y, ws, s, residual);
    return;
  }
  fwd_->set_fp8_scales(&meta(l, 0)->scale_inv, &meta(l, 1)->scale_inv);
  run_in_layer(*fwd_, l, x8_.get(), w(l), y, 1.0f, residual ? 1.0f : 0.0f, residual, bias, ws, s);
}

void Fp8Linear::backward(const Fp8Backward& a, cudaStream_t s) {
  if (!train_) throw Error("Fp8Linear::backward: built for inference");
  const int l = a.layer;
  if (!a.dy_cast_done && (dgrad_ || wgrad_)) {
    mark(a.marks, a.marks.cast, s);
    fp8_cast(grad_cast(l, a.dy), s);
  }
  mark(a.marks, a.marks.gemm, s);
  if (!wgrad_) {
    bf16_->backward_weight(a.x, a.dy, a.dw, a.beta_dw, a.ws, s);
  } else {
    wgrad_->set_fp8_scales(&meta(l, 2)->scale_inv, &meta(l, 0)->scale_inv);
    if (wgrad_f32_) {
      run_in_layer(*wgrad_, l, dy8t_.get(), x_t(l), a.dw, 1.0f, a.beta_dw, nullptr, nullptr, a.ws,
                   s);
    } else {
      run_in_layer(*wgrad_, l, dy8t_.get(), x_t(l), dw16_.get(), 1.0f, 0.0f, nullptr, nullptr, a.ws,
                   s);
      add_bf16_into_f32(dw16_.get(), a.dw, out_ * in_, a.beta_dw, s);
    }
  }
  if (!dgrad_) {
    bf16_->backward_data(a.dy, a.w16, a.dx, a.beta_dx, a.beta_dx != 0.0f ? a.dx : nullptr, a.ws, s);
    return;
  }
  dgrad_->set_fp8_scales(&meta(l, 2)->scale_inv, &meta(l, 1)->scale_inv);
  run_in_layer(*dgrad_, l, dy8_.get(), w_t(l), a.dx, 1.0f, a.beta_dx, a.dx, nullptr, a.ws, s);
}

}  // namespace gpuvs::models::bert
