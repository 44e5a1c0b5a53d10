// A 2-d convolution in NHWC with KRSC filters through cuDNN's legacy API. The
// algorithms (forward, backward data, backward filter) are chosen once per layer
// shape with cudnnFind*AlgorithmEx, like torch.backends.cudnn.benchmark: the fastest
// that fits the search workspace, a deterministic one when it is within 5% of it.
// fp32 precision never takes a tensor-op (TF32) algorithm; no precision takes FFT or
// Winograd algorithms unless a shape has nothing else (their ~1e-4 per-element error
// in fp32 flips ReLU masks against PyTorch and grows through the backward). Without
// autotuning, the first usable algorithm in cuDNN's heuristic order (cudnnGet*_v7,
// nothing run). Deterministic mode takes only algorithms cuDNN reports as
// deterministic (with autotune off, the same ones on every run).
#pragma once

#include <cudnn.h>

#include <cstddef>
#include <map>
#include <memory>
#include <tuple>

#include "models/layers/cudnn.h"
#include "models/layers/dtype.h"

namespace gpuvs::models {

struct ConvAlgos {
  cudnnConvolutionFwdAlgo_t fwd{};
  cudnnMathType_t fwd_math{};
  cudnnConvolutionBwdDataAlgo_t bwd_data{};
  cudnnMathType_t bwd_data_math{};
  cudnnConvolutionBwdFilterAlgo_t bwd_filter{};
  cudnnMathType_t bwd_filter_math{};
  size_t workspace = 0;  // bytes the chosen algorithms need at most
};

// Algorithms already found, keyed by everything that shapes the search.
using ConvAlgoCache =
    std::map<std::tuple<int, int, int, int, int, int, int, int, int, int>, ConvAlgos>;

class Conv2d {
 public:
  struct Params {
    int n = 0, c = 0, h = 0, w = 0;  // input (N, H, W, C)
    int k = 0, r = 1;                // k outputs, r x r window
    int stride = 1, pad = 0;
    DType dtype = DType::kF32;
    bool tensor_ops = true;      // false: FP32 FMA math only (fp32 precision)
    bool need_dgrad = true;      // false for the first layer (no input gradient)
    bool train = true;           // false: forward algorithm only
    bool autotune = true;        // false: cuDNN's heuristic order (cudnnGet*_v7), untimed
    bool deterministic = false;  // only CUDNN_DETERMINISTIC algorithms (none: an error)
  };

  explicit Conv2d(const Params& p);
  const Params& params() const { return p_; }
  int out_h() const { return out_h_; }
  int out_w() const { return out_w_; }
  int64_t weight_count() const { return int64_t(p_.k) * p_.r * p_.r * p_.c; }
  // Multiply-adds x 2 of the forward pass.
  double forward_flops() const;

  // Runs the searches (or takes them from `cache`) on real buffers of the right
  // sizes: x (N,H,W,C), w (K,R,R,C), y (N,P,Q,K), dx like x, dw like w. They are
  // overwritten. `ws` is the search workspace; without autotuning nothing runs and
  // ws_bytes only caps the workspace an algorithm may need.
  void select_algorithms(cudnnHandle_t h, ConvAlgoCache& cache, void* x, void* w, void* y, void* dx,
                         void* dw, void* ws, size_t ws_bytes);
  size_t workspace_bytes() const { return algos_.workspace; }

  // y = conv(x, w)   x (N,H,W,C), w (K,R,R,C), y (N,P,Q,K)
  void forward(cudnnHandle_t h, const void* x, const void* w, void* y, void* ws,
               size_t ws_bytes) const;
  // dx = beta * dx + conv_transpose(dy, w)
  void backward_data(cudnnHandle_t h, const void* dy, const void* w, void* dx, float beta, void* ws,
                     size_t ws_bytes) const;
  // dw = beta * dw + x^T dy
  void backward_filter(cudnnHandle_t h, const void* x, const void* dy, void* dw, float beta,
                       void* ws, size_t ws_bytes) const;

 private:
  Params p_;
  int out_h_ = 0, out_w_ = 0;
  TensorDesc x_desc_;
  TensorDesc y_desc_;
  FilterDesc w_desc_;
  ConvDesc fwd_desc_;
  ConvDesc bwd_data_desc_;
  ConvDesc bwd_filter_desc_;
  ConvAlgos algos_;
};

}  // namespace gpuvs::models
