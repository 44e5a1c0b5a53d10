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

#include <span>

#include "core/run_file.h"
#include "suite/produces.h"

// Every result a benchmark wrote has a row in the table of what gpuvs produces
// (suite/produces.h), and an ok result has that row's unit.
inline void expect_ids_in_table(std::span<const gpuvs::Result> results) {
  for (const gpuvs::Result& r : results) {
    const auto m = gpuvs::match_result_id(r.id);
    EXPECT_TRUE(m) << r.id << " has no row in suite/produces.cpp";
    if (m && r.status == gpuvs::Status::kOk) {
      EXPECT_EQ(r.unit, gpuvs::family_unit(*m->family, m->values)) << r.id;
    }
  }
}
