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

// Compute capability of GPU 0 as 10 * major + minor.
inline int compute_capability() {
  int major = 0, minor = 0;
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0);
  cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0);
  return 10 * major + minor;
}

// Skips a test of FP8 work on a GPU without FP8 tensor cores.
#define GPUVS_REQUIRE_FP8()                                               \
  if (compute_capability() < 89)                                          \
  GTEST_SKIP() << "fp8 needs compute capability 8.9 or newer (this GPU: " \
               << compute_capability() / 10 << "." << compute_capability() % 10 << ")"

#include <span>

#include "core/run_file.h"
#include "measure/harness.h"
#include "suite/produces.h"

// A budget far below the quick pass's, for tests that check that a benchmark runs and
// checks its output, not its figures.
inline gpuvs::MeasureOptions tiny_options() {
  gpuvs::MeasureOptions o;
  o.min_samples = 3;
  o.max_samples = 5;
  o.time_cap_s = 0.02;
  o.warmup_cap_s = 0.02;
  o.max_warmup_batches = 3;
  o.target_noise = 0.05;
  return o;
}

// Every result a benchmark wrote has a row in the table of what gpuvs produces
// (suite/produces.h), and an ok result has that row's unit.
inline void expect_ids_in_table(std::span<const gpuvs::Result> results) {
  for (const gpuvs::Result& r : results) {
    const auto m = gpuvs::match_result_id(r.id);
    EXPECT_TRUE(m) << r.id << " has no row in suite/produces_rows.cpp";
    if (m && r.status == gpuvs::Status::kOk) {
      EXPECT_EQ(r.unit, gpuvs::family_unit(*m->family, m->values)) << r.id;
    }
  }
}
