// Error checks for every CUDA-family library call. Each macro captures the
// expression, file and line and throws gpuvs::Error; `main` turns it into an exit
// code. Headers of the libraries are included by the file that uses the macro.
#pragma once

#include <string>

#include "core/error.h"

namespace gpuvs::detail {

[[noreturn]] void throw_check_failure(const char* library, const char* expr, int code,
                                      const std::string& detail, const char* file, int line);

}  // namespace gpuvs::detail

#define GPUVS_CUDA_CHECK(expr)                                                                  \
  do {                                                                                          \
    cudaError_t gpuvs_err_ = (expr);                                                            \
    if (gpuvs_err_ != cudaSuccess)                                                              \
      ::gpuvs::detail::throw_check_failure("CUDA", #expr, static_cast<int>(gpuvs_err_),         \
                                           cudaGetErrorString(gpuvs_err_), __FILE__, __LINE__); \
  } while (0)

// After a kernel launch: catches launch-configuration errors at once.
#define GPUVS_CUDA_CHECK_LAUNCH() GPUVS_CUDA_CHECK(cudaGetLastError())

#define GPUVS_CUBLAS_CHECK(expr)                                                                  \
  do {                                                                                            \
    cublasStatus_t gpuvs_st_ = (expr);                                                            \
    if (gpuvs_st_ != CUBLAS_STATUS_SUCCESS)                                                       \
      ::gpuvs::detail::throw_check_failure("cuBLAS", #expr, static_cast<int>(gpuvs_st_),          \
                                           cublasGetStatusString(gpuvs_st_), __FILE__, __LINE__); \
  } while (0)

#define GPUVS_CUDNN_CHECK(expr)                                                                 \
  do {                                                                                          \
    cudnnStatus_t gpuvs_st_ = (expr);                                                           \
    if (gpuvs_st_ != CUDNN_STATUS_SUCCESS)                                                      \
      ::gpuvs::detail::throw_check_failure("cuDNN", #expr, static_cast<int>(gpuvs_st_),         \
                                           cudnnGetErrorString(gpuvs_st_), __FILE__, __LINE__); \
  } while (0)

#define GPUVS_NCCL_CHECK(expr)                                                                 \
  do {                                                                                         \
    ncclResult_t gpuvs_st_ = (expr);                                                           \
    if (gpuvs_st_ != ncclSuccess)                                                              \
      ::gpuvs::detail::throw_check_failure("NCCL", #expr, static_cast<int>(gpuvs_st_),         \
                                           ncclGetErrorString(gpuvs_st_), __FILE__, __LINE__); \
  } while (0)
