#include "models/bert/gemm.h"

#include <fmt/format.h>

#include "core/error.h"
#include "gpu/check.h"
#include "gpu/device.h"
#include "models/bert/kernels.h"
#include "models/layers/cuda_dtype.h"

namespace gpuvs::models::bert {

namespace {

void set_batch(const LtMatrixLayout& l, int batch, int64_t stride) {
  if (batch == 1) return;
  const int32_t count = batch;
  GPUVS_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(l.get(), CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                                      &count, sizeof(count)));
  GPUVS_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(
      l.get(), CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)));
}

// cuBLASLt's A is our B (E4M3 under FP8), its B our A.
cudaDataType_t a_type(const GemmShape& s) {
  return s.fp8 ? CUDA_R_8F_E4M3 : cuda_data_type(s.ab);
}
cudaDataType_t b_type(const GemmShape& s) {
  if (!s.fp8) return cuda_data_type(s.ab);
  return s.a_e5m2 ? CUDA_R_8F_E5M2 : CUDA_R_8F_E4M3;
}

const char* type_name(const GemmShape& s, bool a_side) {
  if (s.fp8) return (a_side && s.a_e5m2) ? "e5m2" : "e4m3";
  switch (s.ab) {
    case DType::kF16:
      return "fp16";
    case DType::kBF16:
      return "bf16";
    case DType::kF32:
      break;
  }
  return s.tf32 ? "fp32 (tf32)" : "fp32";
}

}  // namespace

std::string describe(const GemmShape& s) {
  const char* d = s.c_f32 ? "fp32" : (s.fp8 ? "bf16" : type_name(s, true));
  return fmt::format("{}: m {} n {} k {}{}, A {} stored {}, B {} stored {}, D {}{}",
                     s.name.empty() ? std::string("BERT GEMM") : s.name, s.m, s.n, s.k,
                     s.batch > 1 ? fmt::format(", batch {}", s.batch) : std::string(),
                     type_name(s, true), s.ta ? "(k, m)" : "(m, k)", type_name(s, false),
                     s.tb ? "(n, k)" : "(k, n)", d, s.bias ? ", + bias" : "");
}

// Column-major view: cuBLASLt's A is our B, its B is our A, its D (n x m) is our C.
struct Gemm::Plan {
  LtMatmulDesc desc;
  LtMatrixLayout a, b, c;
  cublasLtMatmulAlgo_t algo{};
  bool fused_bias = false;
  bool fast_accum = false;

  Plan(const LtHandle& h, const GemmShape& s)
      : desc(s.tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F, CUDA_R_32F),
        a(a_type(s), s.tb ? s.k : s.n, s.tb ? s.n : s.k, s.ldb),
        b(b_type(s), s.ta ? s.m : s.k, s.ta ? s.k : s.m, s.lda),
        c(s.c_f32 ? CUDA_R_32F : (s.fp8 ? CUDA_R_16BF : cuda_data_type(s.ab)), s.n, s.m, s.ldc) {
    const cublasOperation_t ta = s.tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t tb = s.ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    desc.set(CUBLASLT_MATMUL_DESC_TRANSA, ta);
    desc.set(CUBLASLT_MATMUL_DESC_TRANSB, tb);
    set_batch(a, s.batch, s.stride_b);
    set_batch(b, s.batch, s.stride_a);
    set_batch(c, s.batch, s.stride_c);
    if (s.fp8) {
      choose_fp8(h, s);
      return;
    }
    LtMatmulPreference pref(kGemmWorkspaceBytes);
    if (s.bias) {
      desc.set(CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_BIAS);
      const auto found = lt_heuristics(h, desc, a, b, c, c, pref, 1);
      if (!found.empty()) {
        algo = found[0].algo;
        fused_bias = true;
        return;
      }
      desc.set(CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_DEFAULT);
    }
    const auto found = lt_heuristics(h, desc, a, b, c, c, pref, 1);
    if (found.empty()) throw Error(fmt::format("cuBLASLt has no algorithm for {}", describe(s)));
    algo = found[0].algo;
  }

  // FP8: the scale (and bias) pointers are set before the heuristic query, since
  // cuBLASLt picks kernels by them; every candidate is then run once on scratch
  // memory, as the heuristic alone has accepted FP8 GEMMs that cublasLtMatmul then
  // refused (CUBLAS_STATUS_NOT_SUPPORTED on the first H200 run).
  void choose_fp8(const LtHandle& h, const GemmShape& s) {
    if (s.ta || !s.tb)
      throw Error(describe(s) + ": FP8 GEMMs take A stored (m, k) and B stored (n, k) only");
    for (int64_t v : {s.m, s.n, s.k, s.lda, s.ldb, s.ldc})
      if (v % 16 != 0)
        throw Error(describe(s) +
                    ": FP8 GEMMs need sizes and leading dimensions that are "
                    "multiples of 16");
    if (s.batch != 1) throw Error(describe(s) + ": FP8 GEMMs are not batched here");
    const size_t d_bytes = s.c_f32 ? 4 : 2;
    DeviceBuffer sa(size_t(s.m * s.lda)), sb(size_t(s.n * s.ldb));
    // The bias sits 128 bytes into its buffer: the alignment of BERT's biases (ParamLayout's
    // kAlign of 64 bf16 elements), which the heuristic reads from the pointer.
    constexpr size_t kBiasOffset = 128;
    DeviceBuffer sd(size_t(s.m * s.ldc) * d_bytes), sbias(size_t(s.n) * 2 + kBiasOffset);
    // Default scales 1, each in its own 256-byte slot (cuBLASLt checks their alignment).
    DeviceBuffer scales(512), ws(kGemmWorkspaceBytes);
    for (DeviceBuffer* z : {&sa, &sb, &sd, &sbias, &scales})
      GPUVS_CUDA_CHECK(cudaMemset(z->get(), 0, z->bytes()));
    const float one = 1.0f;
    for (size_t slot : {size_t(0), size_t(256)})
      GPUVS_CUDA_CHECK(
          cudaMemcpy(scales.as<char>() + slot, &one, sizeof(one), cudaMemcpyHostToDevice));
    const float* a_scale = s.a_scale ? s.a_scale : scales.as<float>();
    const float* b_scale = s.b_scale ? s.b_scale : scales.as<float>() + 64;
    desc.set(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, b_scale);  // cuBLASLt's A: our B
    desc.set(CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, a_scale);
    LtMatmulPreference pref(kGemmWorkspaceBytes);
    const float alpha = 1.0f, beta = s.accumulate ? 1.0f : 0.0f;
    std::string tried;
    for (const bool fuse : {true, false}) {
      if (fuse && !s.bias) continue;
      for (const bool fast : {true, false}) {
        if (fast && !s.fast_accum) continue;
        desc.set(CUBLASLT_MATMUL_DESC_EPILOGUE,
                 fuse ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT);
        if (fuse) {
          desc.set(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, int32_t(CUDA_R_16BF));
          desc.set(CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                   static_cast<const void*>(sbias.as<char>() + kBiasOffset));
        }
        desc.set(CUBLASLT_MATMUL_DESC_FAST_ACCUM, int8_t(fast ? 1 : 0));
        const auto found = lt_heuristics(h, desc, a, b, c, c, pref, 8);
        cublasStatus_t last = CUBLAS_STATUS_NOT_SUPPORTED;
        for (const auto& r : found) {
          last = cublasLtMatmul(h.get(), desc.get(), &alpha, sb.get(), a.get(), sa.get(), b.get(),
                                &beta, sd.get(), c.get(), sd.get(), c.get(), &r.algo, ws.get(),
                                kGemmWorkspaceBytes, nullptr);
          if (last != CUBLAS_STATUS_SUCCESS) continue;
          GPUVS_CUDA_CHECK(cudaDeviceSynchronize());
          algo = r.algo;
          fused_bias = fuse;
          fast_accum = fast;
          return;
        }
        tried += fmt::format("; bias {}, fast accumulation {}: {} algorithm(s), last status {}",
                             fuse ? "fused" : "separate", fast ? "on" : "off", found.size(),
                             cublasLtGetStatusString(last));
      }
    }
    throw Error(fmt::format("cuBLASLt runs no FP8 algorithm for {}{}", describe(s), tried));
  }
};

Gemm::Gemm(const LtHandle& handle, const GemmShape& shape)
    : handle_(handle), s_(shape), plan_(std::make_unique<Plan>(handle, shape)) {}

Gemm::~Gemm() = default;

std::string Gemm::plan() const {
  const LtAlgoConfig c = lt_algo_config(plan_->algo);
  std::string out = fmt::format("algo {} tile {}", c.id, c.tile);
  if (s_.bias) out += plan_->fused_bias ? ", bias fused" : ", bias separate";
  if (plan_->fast_accum) out += ", fast accumulation";
  return out;
}

void Gemm::set_fp8_scales(const float* a_scale_inv, const float* b_scale_inv) {
  plan_->desc.set(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, b_scale_inv);  // cuBLASLt's A: our B
  plan_->desc.set(CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, a_scale_inv);
}

void Gemm::run(const void* a, const void* b, void* d, float alpha, float beta, const void* c_in,
               const void* bias, void* ws, cudaStream_t s) {
  if (plan_->fused_bias) plan_->desc.set(CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias);
  if (c_in == nullptr) c_in = d;
  const cublasStatus_t st = cublasLtMatmul(
      handle_.get(), plan_->desc.get(), &alpha, b, plan_->a.get(), a, plan_->b.get(), &beta, c_in,
      plan_->c.get(), d, plan_->c.get(), &plan_->algo, ws, kGemmWorkspaceBytes, s);
  if (st != CUBLAS_STATUS_SUCCESS)
    throw Error(fmt::format("cublasLtMatmul refused {} ({}; beta {}): {}", describe(s_), plan(),
                            beta, cublasLtGetStatusString(st)));
  if (s_.bias && !plan_->fused_bias) {
    AddBiasArgs ab;
    ab.rows = s_.m * s_.batch;  // bias GEMMs are not batched; rows of C
    ab.cols = s_.n;
    ab.ld = s_.ldc;
    ab.dtype = s_.c_f32 ? DType::kF32 : (s_.fp8 ? DType::kBF16 : s_.ab);
    ab.y = d;
    ab.bias = bias;
    add_bias(ab, s);
  }
}

Linear::Linear(const LtHandle& handle, const LinearShape& p) {
  const int64_t ld_x = p.ld_x ? p.ld_x : p.in;
  GemmShape f;
  f.m = p.rows;
  f.n = p.out;
  f.k = p.in;
  f.tb = true;  // W stored (out, in)
  f.lda = ld_x;
  f.ldb = p.in;
  f.ldc = p.out;
  f.ab = p.dtype;
  f.tf32 = p.tf32;
  f.bias = true;
  fwd_ = std::make_unique<Gemm>(handle, f);
  if (!p.train) return;
  GemmShape d;  // dx (rows, in) = dy (rows, out) W (out, in)
  d.m = p.rows;
  d.n = p.in;
  d.k = p.out;
  d.lda = p.out;
  d.ldb = p.in;
  d.ldc = ld_x;
  d.ab = p.dtype;
  d.tf32 = p.tf32;
  dgrad_ = std::make_unique<Gemm>(handle, d);
  GemmShape w;  // dW (out, in) = dy^T (out, rows) x (rows, in)
  w.ta = true;
  w.m = p.out;
  w.n = p.in;
  w.k = p.rows;
  w.lda = p.out;
  w.ldb = ld_x;
  w.ldc = p.in;
  w.ab = p.dtype;
  w.c_f32 = true;
  w.tf32 = p.tf32;
  wgrad_ = std::make_unique<Gemm>(handle, w);
}

void Linear::forward(const void* x, const void* w, const void* b, void* y, void* ws,
                     cudaStream_t s) {
  fwd_->run(x, w, y, 1.0f, 0.0f, nullptr, b, ws, s);
}

void Linear::backward_data(const void* dy, const void* w, void* dx, float beta, const void* dx_in,
                           void* ws, cudaStream_t s) {
  dgrad_->run(dy, w, dx, 1.0f, beta, dx_in, nullptr, ws, s);
}

void Linear::backward_weight(const void* x, const void* dy, float* dw, float beta, void* ws,
                             cudaStream_t s) {
  wgrad_->run(dy, x, dw, 1.0f, beta, nullptr, nullptr, ws, s);
}

}  // namespace gpuvs::models::bert
