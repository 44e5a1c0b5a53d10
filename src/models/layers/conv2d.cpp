#include "models/layers/conv2d.h"

#include <fmt/format.h>

#include <string>
#include <vector>

#include "core/error.h"

namespace gpuvs::models {

namespace {

int out_size(int in, int r, int stride, int pad) {
  return (in + 2 * pad - r) / stride + 1;
}

// fp32 takes FMA math only (strict: results cuDNN timed with FMA math; DEFAULT math
// lets FP32 data onto TF32 tensor cores); tf32 (float data) may use tensor ops (TF32)
// but never ALLOW_CONVERSION (which may round float data to fp16); 16-bit data takes
// anything.
bool math_allowed(cudnnMathType_t m, bool tensor_ops, DType t, bool strict) {
  if (!tensor_ops)
    return strict ? m == CUDNN_FMA_MATH
                  : m != CUDNN_TENSOR_OP_MATH && m != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
  if (t == DType::kF32) return m != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
  return true;
}

// FFT and Winograd algorithms trade accuracy for speed (their transforms amplify
// rounding: ~1e-4 per element in fp32, far worse in 16-bit), which the model's
// correctness against PyTorch cannot afford; only GEMM-like algorithms are taken.
bool approximate(cudnnConvolutionFwdAlgo_t a) {
  return a == CUDNN_CONVOLUTION_FWD_ALGO_FFT || a == CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING ||
         a == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD ||
         a == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED;
}
bool approximate(cudnnConvolutionBwdDataAlgo_t a) {
  return a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT ||
         a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING ||
         a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD ||
         a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED;
}
bool approximate(cudnnConvolutionBwdFilterAlgo_t a) {
  return a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT ||
         a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING ||
         a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED;
}

// The fastest usable result, or a deterministic one within 5% of it; with
// `deterministic_only`, the fastest deterministic one. Results come sorted by time
// from cuDNN (heuristic order when untimed). Three passes, the first that finds one
// wins: exact algorithms with strict math (fp32: FMA-timed only), exact algorithms with any
// allowed math, then any allowed algorithm (so that a shape with only FFT or Winograd
// still runs).
template <class Perf>
const Perf& choose(const std::vector<Perf>& results, int count, bool tensor_ops, DType t,
                   size_t ws_bytes, bool timed, bool deterministic_only, const std::string& what) {
  for (int pass = 0; pass < 3; ++pass) {
    const Perf* best = nullptr;
    for (int i = 0; i < count; ++i) {
      const Perf& r = results[static_cast<size_t>(i)];
      if (r.status != CUDNN_STATUS_SUCCESS || r.memory > ws_bytes) continue;
      if (deterministic_only && r.determinism != CUDNN_DETERMINISTIC) continue;
      if (pass < 2 && approximate(r.algo)) continue;
      if (!math_allowed(r.mathType, tensor_ops, t, pass == 0)) continue;
      if (!best) {
        best = &r;
        if (!timed || r.determinism == CUDNN_DETERMINISTIC) break;
        continue;
      }
      if (r.determinism == CUDNN_DETERMINISTIC && r.time <= best->time * 1.05f) {
        best = &r;
        break;
      }
    }
    if (best) return *best;
  }
  throw Error(
      fmt::format("cuDNN found no usable {} algorithm{}", what,
                  deterministic_only ? " among its deterministic ones (--deterministic)" : ""));
}

cudnnMathType_t base_math(bool tensor_ops, DType t) {
  if (!tensor_ops) return CUDNN_FMA_MATH;
  return t == DType::kF32 ? CUDNN_DEFAULT_MATH : CUDNN_TENSOR_OP_MATH;
}

}  // namespace

Conv2d::Conv2d(const Params& p)
    : p_(p),
      out_h_(out_size(p.h, p.r, p.stride, p.pad)),
      out_w_(out_size(p.w, p.r, p.stride, p.pad)),
      x_desc_(p.dtype, p.n, p.c, p.h, p.w),
      y_desc_(p.dtype, p.n, p.k, out_h_, out_w_),
      w_desc_(p.dtype, p.k, p.c, p.r, p.r),
      fwd_desc_(p.pad, p.stride, base_math(p.tensor_ops, p.dtype)),
      bwd_data_desc_(p.pad, p.stride, base_math(p.tensor_ops, p.dtype)),
      bwd_filter_desc_(p.pad, p.stride, base_math(p.tensor_ops, p.dtype)) {}

double Conv2d::forward_flops() const {
  return 2.0 * p_.n * out_h_ * out_w_ * double(p_.k) * p_.c * p_.r * p_.r;
}

void Conv2d::select_algorithms(cudnnHandle_t h, ConvAlgoCache& cache, void* x, void* w, void* y,
                               void* dx, void* dw, void* ws, size_t ws_bytes) {
  const auto key = std::make_tuple(
      p_.n, p_.c, p_.h, p_.w, p_.k, p_.r, p_.stride, p_.pad, static_cast<int>(p_.dtype),
      (p_.tensor_ops ? 1 : 0) + (p_.need_dgrad ? 2 : 0) + (p_.train ? 4 : 0) +
          (p_.autotune ? 8 : 0) + (p_.deterministic ? 16 : 0));
  if (auto it = cache.find(key); it != cache.end()) {
    algos_ = it->second;
  } else {
    constexpr int kMax = 16;
    ConvAlgos a;
    // Named in an error: which layer shape had no algorithm.
    const std::string shape =
        fmt::format(" for {}x{}x{} -> {} channels, {}x{} window, stride {}, batch {}", p_.h, p_.w,
                    p_.c, p_.k, p_.r, p_.r, p_.stride, p_.n);
    {
      std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(kMax);
      int n = 0;
      if (p_.autotune)
        GPUVS_CUDNN_CHECK_OOM(cudnnFindConvolutionForwardAlgorithmEx(
            h, x_desc_.get(), x, w_desc_.get(), w, fwd_desc_.get(), y_desc_.get(), y, kMax, &n,
            perf.data(), ws, ws_bytes));
      else
        GPUVS_CUDNN_CHECK_OOM(
            cudnnGetConvolutionForwardAlgorithm_v7(h, x_desc_.get(), w_desc_.get(), fwd_desc_.get(),
                                                   y_desc_.get(), kMax, &n, perf.data()));
      const auto& c = choose(perf, n, p_.tensor_ops, p_.dtype, ws_bytes, p_.autotune,
                             p_.deterministic, "forward convolution" + shape);
      a.fwd = c.algo;
      a.fwd_math = p_.tensor_ops ? c.mathType : CUDNN_FMA_MATH;
      a.workspace = std::max(a.workspace, c.memory);
    }
    if (p_.train && p_.need_dgrad) {
      std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perf(kMax);
      int n = 0;
      if (p_.autotune)
        GPUVS_CUDNN_CHECK_OOM(cudnnFindConvolutionBackwardDataAlgorithmEx(
            h, w_desc_.get(), w, y_desc_.get(), y, bwd_data_desc_.get(), x_desc_.get(), dx, kMax,
            &n, perf.data(), ws, ws_bytes));
      else
        GPUVS_CUDNN_CHECK_OOM(cudnnGetConvolutionBackwardDataAlgorithm_v7(
            h, w_desc_.get(), y_desc_.get(), bwd_data_desc_.get(), x_desc_.get(), kMax, &n,
            perf.data()));
      const auto& c = choose(perf, n, p_.tensor_ops, p_.dtype, ws_bytes, p_.autotune,
                             p_.deterministic, "backward-data convolution" + shape);
      a.bwd_data = c.algo;
      a.bwd_data_math = p_.tensor_ops ? c.mathType : CUDNN_FMA_MATH;
      a.workspace = std::max(a.workspace, c.memory);
    }
    if (p_.train) {
      std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> perf(kMax);
      int n = 0;
      if (p_.autotune)
        GPUVS_CUDNN_CHECK_OOM(cudnnFindConvolutionBackwardFilterAlgorithmEx(
            h, x_desc_.get(), x, y_desc_.get(), y, bwd_filter_desc_.get(), w_desc_.get(), dw, kMax,
            &n, perf.data(), ws, ws_bytes));
      else
        GPUVS_CUDNN_CHECK_OOM(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
            h, x_desc_.get(), y_desc_.get(), bwd_filter_desc_.get(), w_desc_.get(), kMax, &n,
            perf.data()));
      const auto& c = choose(perf, n, p_.tensor_ops, p_.dtype, ws_bytes, p_.autotune,
                             p_.deterministic, "backward-filter convolution" + shape);
      a.bwd_filter = c.algo;
      a.bwd_filter_math = p_.tensor_ops ? c.mathType : CUDNN_FMA_MATH;
      a.workspace = std::max(a.workspace, c.memory);
    }
    cache.emplace(key, a);
    algos_ = a;
  }
  fwd_desc_.set_math(algos_.fwd_math);
  if (p_.train && p_.need_dgrad) bwd_data_desc_.set_math(algos_.bwd_data_math);
  if (p_.train) bwd_filter_desc_.set_math(algos_.bwd_filter_math);
}

void Conv2d::forward(cudnnHandle_t h, const void* x, const void* w, void* y, void* ws,
                     size_t ws_bytes) const {
  const float one = 1.0f, zero = 0.0f;
  GPUVS_CUDNN_CHECK_OOM(cudnnConvolutionForward(h, &one, x_desc_.get(), x, w_desc_.get(), w,
                                                fwd_desc_.get(), algos_.fwd, ws, ws_bytes, &zero,
                                                y_desc_.get(), y));
}

void Conv2d::backward_data(cudnnHandle_t h, const void* dy, const void* w, void* dx, float beta,
                           void* ws, size_t ws_bytes) const {
  const float one = 1.0f;
  GPUVS_CUDNN_CHECK_OOM(cudnnConvolutionBackwardData(h, &one, w_desc_.get(), w, y_desc_.get(), dy,
                                                     bwd_data_desc_.get(), algos_.bwd_data, ws,
                                                     ws_bytes, &beta, x_desc_.get(), dx));
}

void Conv2d::backward_filter(cudnnHandle_t h, const void* x, const void* dy, void* dw, float beta,
                             void* ws, size_t ws_bytes) const {
  const float one = 1.0f;
  GPUVS_CUDNN_CHECK_OOM(cudnnConvolutionBackwardFilter(h, &one, x_desc_.get(), x, y_desc_.get(), dy,
                                                       bwd_filter_desc_.get(), algos_.bwd_filter,
                                                       ws, ws_bytes, &beta, w_desc_.get(), dw));
}

}  // namespace gpuvs::models
