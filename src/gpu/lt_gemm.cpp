#include "gpu/lt_gemm.h"

#include <fmt/format.h>

#include <string>

#include "core/error.h"
#include "gpu/check.h"
#include "gpu/device.h"

namespace gpuvs {

namespace {

cudaDataType_t cuda_type(GemmElem t) {
  switch (t) {
    case GemmElem::kF64:
      return CUDA_R_64F;
    case GemmElem::kF32:
      return CUDA_R_32F;
    case GemmElem::kF16:
      return CUDA_R_16F;
    case GemmElem::kBF16:
      return CUDA_R_16BF;
    case GemmElem::kE4M3:
      return CUDA_R_8F_E4M3;
    case GemmElem::kE5M2:
      return CUDA_R_8F_E5M2;
    case GemmElem::kI8:
      return CUDA_R_8I;
    case GemmElem::kI32:
      break;
  }
  return CUDA_R_32I;
}

cublasComputeType_t compute_type(GemmCompute c) {
  switch (c) {
    case GemmCompute::k64F:
      return CUBLAS_COMPUTE_64F;
    case GemmCompute::k32F:
      return CUBLAS_COMPUTE_32F;
    case GemmCompute::k32FFastTf32:
      return CUBLAS_COMPUTE_32F_FAST_TF32;
    case GemmCompute::k32I:
      break;
  }
  return CUBLAS_COMPUTE_32I;
}

cublasOperation_t op(bool transposed) {
  return transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
}

void set_batch(const LtMatrixLayout& l, const LtMatrix& m) {
  if (m.batch == 1) return;
  const int32_t count = m.batch;
  GPUVS_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(l.get(), CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                                      &count, sizeof(count)));
  GPUVS_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(
      l.get(), CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &m.stride, sizeof(m.stride)));
}

}  // namespace

LtGemm::LtGemm(const LtHandle& handle, const LtGemmSpec& spec)
    : handle_(handle),
      spec_(spec),
      desc_(compute_type(spec.compute), cuda_type(spec.scale)),
      a_(cuda_type(spec.a.type), uint64_t(spec.a.rows), uint64_t(spec.a.cols), spec.a.ld),
      b_(cuda_type(spec.b.type), uint64_t(spec.b.rows), uint64_t(spec.b.cols), spec.b.ld),
      d_(cuda_type(spec.d.type), uint64_t(spec.d.rows), uint64_t(spec.d.cols), spec.d.ld) {
  desc_.set(CUBLASLT_MATMUL_DESC_TRANSA, op(spec.trans_a));
  desc_.set(CUBLASLT_MATMUL_DESC_TRANSB, op(spec.trans_b));
  set_batch(a_, spec.a);
  set_batch(b_, spec.b);
  set_batch(d_, spec.d);
  plan_.bias = spec.bias;
}

std::vector<LtAlgo> LtGemm::query(const LtMatmulPreference& pref, int max_count) const {
  std::vector<cublasLtMatmulHeuristicResult_t> results(static_cast<size_t>(max_count));
  int returned = 0;
  const cublasStatus_t st =
      cublasLtMatmulAlgoGetHeuristic(handle_.get(), desc_.get(), a_.get(), b_.get(), d_.get(),
                                     d_.get(), pref.get(), max_count, results.data(), &returned);
  if (st == CUBLAS_STATUS_NOT_SUPPORTED) return {};
  GPUVS_CUBLAS_CHECK(st);
  std::vector<LtAlgo> out;
  for (int i = 0; i < returned; ++i) {
    const cublasLtMatmulHeuristicResult_t& r = results[size_t(i)];
    if (r.state != CUBLAS_STATUS_SUCCESS) continue;
    out.push_back({r.algo, r.workspaceSize, int(out.size())});
  }
  return out;
}

std::vector<LtAlgo> LtGemm::heuristics(size_t max_workspace_bytes, int max_count) const {
  return query(LtMatmulPreference(max_workspace_bytes), max_count);
}

void LtGemm::chose(const cublasLtMatmulAlgo_t& algo, int heuristic_index) {
  algo_ = algo;
  const LtAlgoConfig c = lt_algo_config(algo);
  plan_.heuristic_index = heuristic_index;
  plan_.algo_id = c.id;
  plan_.tile = c.tile;
}

void LtGemm::choose(const LtAlgo& algo) {
  chose(algo.algo, algo.heuristic_index);
}

void LtGemm::choose_first(size_t max_workspace_bytes, std::string_view subject) {
  const LtMatmulPreference pref(max_workspace_bytes);
  if (spec_.bias) {
    desc_.set(CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_BIAS);
    const auto found = query(pref, 1);
    if (!found.empty()) {
      chose(found[0].algo, 0);
      plan_.fused_bias = true;
      return;
    }
    desc_.set(CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_DEFAULT);
  }
  const auto found = query(pref, 1);
  if (found.empty()) throw Error(fmt::format("cuBLASLt has no algorithm for {}", subject));
  chose(found[0].algo, 0);
}

void LtGemm::choose_fp8_by_trial(size_t max_workspace_bytes, std::string_view subject) {
  DeviceBuffer sa(spec_.a.bytes()), sb(spec_.b.bytes()), sd(spec_.d.bytes());
  // The bias sits 128 bytes into its buffer: the alignment of BERT's biases (ParamLayout's
  // kAlign of 64 bf16 elements), which the heuristic reads from the pointer.
  constexpr size_t kBiasOffset = 128;
  DeviceBuffer sbias(size_t(spec_.d.rows) * 2 + kBiasOffset);
  // Default scales 1, each in its own 256-byte slot (cuBLASLt checks their alignment).
  DeviceBuffer scales(512), ws(max_workspace_bytes);
  for (DeviceBuffer* z : {&sa, &sb, &sd, &sbias, &scales})
    GPUVS_CUDA_CHECK(cudaMemset(z->get(), 0, z->bytes()));
  const float one = 1.0f;
  for (size_t slot : {size_t(0), size_t(256)})
    GPUVS_CUDA_CHECK(
        cudaMemcpy(scales.as<char>() + slot, &one, sizeof(one), cudaMemcpyHostToDevice));
  set_fp8_scales(spec_.a_scale ? spec_.a_scale : scales.as<float>() + 64,
                 spec_.b_scale ? spec_.b_scale : scales.as<float>());
  const LtMatmulPreference pref(max_workspace_bytes);
  const float alpha = 1.0f, beta = spec_.accumulate ? 1.0f : 0.0f;
  LtOperands trial;
  trial.alpha = &alpha;
  trial.beta = &beta;
  trial.a = sa.get();
  trial.b = sb.get();
  trial.d = sd.get();
  trial.workspace = ws.get();
  trial.workspace_bytes = max_workspace_bytes;
  std::string tried;
  for (const Fp8Attempt& at : fp8_attempts(spec_.bias, spec_.fast_accum)) {
    desc_.set(CUBLASLT_MATMUL_DESC_EPILOGUE,
              at.fuse_bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT);
    if (at.fuse_bias) {
      desc_.set(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, int32_t(CUDA_R_16BF));
      set_bias(sbias.as<char>() + kBiasOffset);
    }
    desc_.set(CUBLASLT_MATMUL_DESC_FAST_ACCUM, int8_t(at.fast_accum ? 1 : 0));
    const auto found = query(pref, 8);
    cublasStatus_t last = CUBLAS_STATUS_NOT_SUPPORTED;
    for (const LtAlgo& r : found) {
      last = matmul(trial, r.algo);
      if (last != CUBLAS_STATUS_SUCCESS) continue;
      GPUVS_CUDA_CHECK(cudaDeviceSynchronize());
      chose(r.algo, r.heuristic_index);
      plan_.fused_bias = at.fuse_bias;
      plan_.fast_accum = at.fast_accum;
      return;
    }
    tried += describe_failed_attempt(at, found.size(), cublasLtGetStatusString(last));
  }
  throw Error(fmt::format("cuBLASLt runs no FP8 algorithm for {}{}", subject, tried));
}

void LtGemm::set_fp8_scales(const float* a_scale, const float* b_scale) {
  desc_.set(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, a_scale);
  desc_.set(CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, b_scale);
}

void LtGemm::set_bias(const void* bias) {
  desc_.set(CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias);
}

cublasStatus_t LtGemm::matmul(const LtOperands& o, const cublasLtMatmulAlgo_t& algo) const {
  const void* c = o.c != nullptr ? o.c : o.d;
  return cublasLtMatmul(handle_.get(), desc_.get(), o.alpha, o.a, a_.get(), o.b, b_.get(), o.beta,
                        c, d_.get(), o.d, d_.get(), &algo, o.workspace, o.workspace_bytes,
                        o.stream);
}

}  // namespace gpuvs
