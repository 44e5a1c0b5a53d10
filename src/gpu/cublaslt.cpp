#include "gpu/cublaslt.h"

#include <fmt/format.h>

#include "gpu/check.h"

namespace gpuvs {

LtHandle::LtHandle() {
  GPUVS_CUBLAS_CHECK(cublasLtCreate(&handle_));
}

LtHandle::~LtHandle() {
  if (handle_) cublasLtDestroy(handle_);
}

LtMatmulDesc::LtMatmulDesc(cublasComputeType_t compute, cudaDataType_t scale) {
  GPUVS_CUBLAS_CHECK(cublasLtMatmulDescCreate(&desc_, compute, scale));
}

LtMatmulDesc::~LtMatmulDesc() {
  if (desc_) cublasLtMatmulDescDestroy(desc_);
}

void LtMatmulDesc::set_raw(cublasLtMatmulDescAttributes_t attribute, const void* value,
                           size_t bytes) {
  GPUVS_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc_, attribute, value, bytes));
}

LtMatrixLayout::LtMatrixLayout(cudaDataType_t type, uint64_t rows, uint64_t cols, int64_t ld) {
  GPUVS_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&layout_, type, rows, cols, ld));
}

LtMatrixLayout::~LtMatrixLayout() {
  if (layout_) cublasLtMatrixLayoutDestroy(layout_);
}

LtMatmulPreference::LtMatmulPreference(size_t max_workspace_bytes) {
  GPUVS_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref_));
  try {
    GPUVS_CUBLAS_CHECK(
        cublasLtMatmulPreferenceSetAttribute(pref_, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                             &max_workspace_bytes, sizeof(max_workspace_bytes)));
  } catch (...) {
    cublasLtMatmulPreferenceDestroy(pref_);
    throw;
  }
}

LtMatmulPreference::~LtMatmulPreference() {
  if (pref_) cublasLtMatmulPreferenceDestroy(pref_);
}

LtAlgoConfig lt_algo_config(const cublasLtMatmulAlgo_t& algo) {
  // Attribute types as cublasLt.h documents them: ID and SPLITK_NUM int32_t, TILE_ID
  // and STAGES_ID uint32_t.
  const auto read = [&](cublasLtMatmulAlgoConfigAttributes_t attr) -> int {
    uint32_t value = 0;
    size_t written = 0;
    if (cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, &value, sizeof(value), &written) !=
            CUBLAS_STATUS_SUCCESS ||
        written != sizeof(value))
      return -1;
    return static_cast<int>(value);
  };
  LtAlgoConfig c;
  c.id = read(CUBLASLT_ALGO_CONFIG_ID);
  c.tile = read(CUBLASLT_ALGO_CONFIG_TILE_ID);
  c.stages = read(CUBLASLT_ALGO_CONFIG_STAGES_ID);
  c.splitk = read(CUBLASLT_ALGO_CONFIG_SPLITK_NUM);
  return c;
}

std::string cublaslt_version_string() {
  // cublasLtGetVersion(): major * 10000 + minor * 100 + patch.
  const size_t v = cublasLtGetVersion();
  return fmt::format("{}.{}.{}", v / 10000, (v / 100) % 100, v % 100);
}

}  // namespace gpuvs
