// Shared by the GPU tests: skip with a reason when this machine has no usable GPU.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#define GPUVS_REQUIRE_GPU()                                                                 \
  do {                                                                                      \
    int gpuvs_count_ = 0;                                                                   \
    const cudaError_t gpuvs_err_ = cudaGetDeviceCount(&gpuvs_count_);                       \
    if (gpuvs_err_ != cudaSuccess || gpuvs_count_ == 0) {                                   \
      cudaGetLastError();                                                                   \
      GTEST_SKIP() << "no GPU: "                                                            \
                   << (gpuvs_err_ != cudaSuccess ? cudaGetErrorString(gpuvs_err_)           \
                                                 : "cudaGetDeviceCount reports 0 devices"); \
    }                                                                                       \
  } while (0)
