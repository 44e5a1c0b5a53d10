// RAII owners for cuBLASLt objects: the library handle, a matmul descriptor, a
// matrix layout and a matmul preference. Copy is deleted everywhere; every failing
// call throws gpuvs::Error through GPUVS_CUBLAS_CHECK (library, expression, line).
// GEMMs are built from these by gpu/lt_gemm.h.
#pragma once

#include <cublasLt.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace gpuvs {

class LtHandle {
 public:
  LtHandle();
  ~LtHandle();
  LtHandle(const LtHandle&) = delete;
  LtHandle& operator=(const LtHandle&) = delete;
  cublasLtHandle_t get() const { return handle_; }

 private:
  cublasLtHandle_t handle_ = nullptr;
};

class LtMatmulDesc {
 public:
  LtMatmulDesc(cublasComputeType_t compute, cudaDataType_t scale);
  ~LtMatmulDesc();
  LtMatmulDesc(const LtMatmulDesc&) = delete;
  LtMatmulDesc& operator=(const LtMatmulDesc&) = delete;
  cublasLtMatmulDesc_t get() const { return desc_; }

  // Sets an attribute from a value of the attribute's documented type.
  template <class T>
  void set(cublasLtMatmulDescAttributes_t attribute, const T& value) {
    set_raw(attribute, &value, sizeof(T));
  }

 private:
  void set_raw(cublasLtMatmulDescAttributes_t attribute, const void* value, size_t bytes);
  cublasLtMatmulDesc_t desc_ = nullptr;
};

// A column-major rows x cols matrix of `type` with leading dimension `ld` (>= rows).
class LtMatrixLayout {
 public:
  LtMatrixLayout(cudaDataType_t type, uint64_t rows, uint64_t cols, int64_t ld);
  ~LtMatrixLayout();
  LtMatrixLayout(const LtMatrixLayout&) = delete;
  LtMatrixLayout& operator=(const LtMatrixLayout&) = delete;
  cublasLtMatrixLayout_t get() const { return layout_; }

 private:
  cublasLtMatrixLayout_t layout_ = nullptr;
};

class LtMatmulPreference {
 public:
  explicit LtMatmulPreference(size_t max_workspace_bytes);
  ~LtMatmulPreference();
  LtMatmulPreference(const LtMatmulPreference&) = delete;
  LtMatmulPreference& operator=(const LtMatmulPreference&) = delete;
  cublasLtMatmulPreference_t get() const { return pref_; }

 private:
  cublasLtMatmulPreference_t pref_ = nullptr;
};

// What an algorithm is, as cuBLASLt names it (CUBLASLT_ALGO_CONFIG_*); -1 where the
// attribute cannot be read.
struct LtAlgoConfig {
  int id = -1;
  int tile = -1;
  int stages = -1;
  int splitk = -1;
};
LtAlgoConfig lt_algo_config(const cublasLtMatmulAlgo_t& algo);

// "13.0.0" from cublasLtGetVersion().
std::string cublaslt_version_string();

}  // namespace gpuvs
