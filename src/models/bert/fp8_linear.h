// One dense layer kind of a transformer (BERT's QKV, attention output, FFN1, FFN2;
// Llama's four projections) in FP8 for all its layers: y = x W^T + b (or no bias, or
// + a residual in the epilogue: Fp8Epilogue) with x and W in E4M3, dx = dy W and dW = dy^T x with
// dy in E5M2 (fp8.h for the scaling). cuBLASLt's FP8 GEMMs on Hopper take only the "TN" form (both
// operands K-major, gemm.h), so the weights are kept in FP8 twice, W (out, in) for the forward and
// W^T (in, out) for dgrad, the layer input x is cast with its transpose x^T (in, rows) for wgrad,
// and dy is cast with its transpose (one cast-and-transpose kernel each, as NVIDIA's Transformer
// Engine does). Activations stay bf16 outside the GEMMs; the bias is bf16 (fused epilogue where
// cuBLASLt runs it); weight gradients are FP32 (bf16 plus an FP32 add where cuBLASLt runs no FP8
// GEMM with an FP32 output).
//
// Each of the three GEMMs is FP8 only where cuBLASLt runs it (Gemm tries it at
// construction); one it refuses runs in bf16 from the bf16 working copies instead
// (x, W, dy), and plan() says which and why. So a refusal shows at construction and
// in the plan, never at the first step.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "gpu/cublaslt.h"
#include "gpu/device.h"
#include "measure/region_timer.h"
#include "models/bert/fp8.h"
#include "models/bert/gemm.h"

namespace gpuvs::models::bert {

// Profile marks of forward() and backward() (timer null: none): `cast` before the
// casts (with their amax and transposes), `gemm` before the GEMMs (bf16 ones where
// cuBLASLt refused FP8, and the bf16-to-FP32 add of a bf16 wgrad). The caller marks
// its own region again afterwards.
struct Fp8Marks {
  RegionTimer* timer = nullptr;
  const char* cast = nullptr;  // string literals (RegionTimer::mark)
  const char* gemm = nullptr;
};

// What Fp8Linear::backward reads and writes for encoder layer `layer`.
struct Fp8Backward {
  int layer = 0;
  const void* x = nullptr;    // (rows, in) bf16, read where a GEMM runs in bf16
  const void* w16 = nullptr;  // (out, in) bf16 working copy of W, likewise
  const void* dy = nullptr;   // (rows, out) bf16
  void* dx = nullptr;         // (rows, in) bf16 = dy W + beta_dx dx (in place)
  float beta_dx = 0;
  float* dw = nullptr;  // (out, in) fp32 = dy^T x + beta_dw dw
  float beta_dw = 0;
  void* ws = nullptr;  // kGemmWorkspaceBytes
  Fp8Marks marks;
  // The caller ran grad_cast(layer, dy), fused into the kernel producing dy.
  bool dy_cast_done = false;
};

// The forward's epilogue: a bias (BERT) or none (Llama); a residual added (beta 1,
// Llama's attention output and down projections) or not.
struct Fp8Epilogue {
  bool bias = true;
  bool residual = false;
};

// The device metas of `layers` Fp8Linear layers, Fp8Linear::kMetasPerLayer each and in
// its order (x: E4M3, delayed; W: E4M3, current; dy: E5M2, delayed), initialised.
DeviceBuffer fp8_linear_metas(int layers);

class Fp8Linear {
 public:
  // metas: (layers, 3) device metas of x, W and dy per layer, initialised by the caller.
  // name: the layer's name in messages and the plan ("qkv", "ffn1", ...).
  Fp8Linear(const LtHandle& handle, int64_t rows, int64_t in, int64_t out, int layers, bool train,
            Fp8Meta* metas, const std::string& name, const Fp8Epilogue& epilogue = {});
  ~Fp8Linear();
  Fp8Linear(const Fp8Linear&) = delete;
  Fp8Linear& operator=(const Fp8Linear&) = delete;

  static constexpr int kMetasPerLayer = 3;  // x, W, dy

  // The current scaling of layer l's W from its FP32 master (out, in), for an
  // Fp8ScaleBatch run before cast_weight; none where no GEMM takes W in FP8.
  std::optional<Fp8ScaleJob> weight_scale_job(int l, const float* master) const;
  // W and/or W^T of layer l in E4M3 from the FP32 master, with the scale its
  // weight_scale_job set.
  void cast_weight(int l, const float* master, cudaStream_t s);
  // y (rows, out) bf16 = x (rows, in) bf16 W^T + bias (out) bf16 [+ residual (rows,
  // out) bf16, with Fp8Epilogue::residual; null: none]; w16 (out, in) is the bf16
  // working copy of W (used where the forward GEMM runs in bf16). x_cast_done: the
  // caller ran input_cast(l, x) itself, fused into the kernel producing x.
  void forward(int l, const void* x, const void* w16, const void* bias, void* y, void* ws,
               cudaStream_t s, const Fp8Marks& marks = {}, bool x_cast_done = false,
               const void* residual = nullptr);
  // dx and dw of one layer (Fp8Backward).
  void backward(const Fp8Backward& args, cudaStream_t s);

  // The casts forward() and backward() run on x (E4M3, with x^T for wgrad) and dy
  // (E5M2, with dy^T), for a caller that fuses one into the kernel producing its
  // source (fp8.h's Fp8CastOp); outputs the layer does not use are null.
  Fp8CastArgs input_cast(int l, const void* x) const;
  Fp8CastArgs grad_cast(int l, const void* dy) const;
  // Whether a GEMM of this layer reads x in bf16 (one cuBLASLt refused in FP8): then
  // a fused producer must still write x in bf16.
  bool reads_bf16_input() const { return !fwd_ || (train_ && !wgrad_); }
  // The same for dy (backward).
  bool reads_bf16_grad() const { return !dgrad_ || !wgrad_; }

  // "qkv: fwd FP8 (algo .., bias fused, fast accumulation); dgrad FP8 (..); wgrad bf16
  // (why)": which GEMMs are FP8.
  std::string plan() const;

 private:
  Fp8Meta* meta(int l, int which) const { return metas_ + l * kMetasPerLayer + which; }
  // Whether a GEMM takes W in FP8 (forward W, or dgrad W^T): then W is scaled and cast.
  bool weight_in_fp8() const { return fwd_ || (train_ && dgrad_); }
  uint8_t* x_t(int l) const { return x8t_.as<uint8_t>() + size_t(l) * in_ * rows_; }
  uint8_t* w(int l) const { return w8_.as<uint8_t>() + size_t(l) * out_ * in_; }
  uint8_t* w_t(int l) const { return w8t_.as<uint8_t>() + size_t(l) * in_ * out_; }

  int64_t rows_, in_, out_;
  bool train_;
  Fp8Meta* metas_;
  std::string name_;
  std::unique_ptr<Gemm> fwd_, dgrad_, wgrad_;    // FP8; null: that GEMM runs in bf16
  std::string fwd_why_, dgrad_why_, wgrad_why_;  // why a GEMM is bf16
  std::unique_ptr<DenseLayer> bf16_;             // the bf16 GEMMs
  bool wgrad_f32_ = true;                        // false: bf16 output into dw16_, then added
  DeviceBuffer x8_;                              // (rows, in) E4M3, FP8 forward
  DeviceBuffer x8t_;                             // (layers, in, rows) E4M3, FP8 wgrad
  DeviceBuffer w8_;                              // (layers, out, in) E4M3, FP8 forward
  DeviceBuffer w8t_;                             // (layers, in, out) E4M3, FP8 dgrad
  DeviceBuffer dy8_;                             // (rows, out) E5M2, FP8 dgrad
  DeviceBuffer dy8t_;                            // (out, rows) E5M2, FP8 wgrad
  DeviceBuffer dw16_;                            // (out, in) bf16, where wgrad_f32_ is false
};

}  // namespace gpuvs::models::bert
