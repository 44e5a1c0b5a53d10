// Shared by the GPU tests of the fused FP8 casts (bert/fp8.h): one cast fused with the
// kernel that produces its input against the unfused pair, compared bit for bit.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <vector>

#include "gpu/check.h"
#include "gpu/device.h"
#include "models/bert/fp8.h"

namespace gpuvs::models {

// What each of the two casts wrote: [0] the unfused one, [1] the fused one.
struct Fp8CastPair {
  const DeviceBuffer* value16[2];  // the 16-bit values (the unfused kernel's, value_out)
  const DeviceBuffer* out[2];      // the FP8 bytes
  const DeviceBuffer* out_t[2];    // their transposes
  const DeviceBuffer* meta[2];     // the metas, amax recorded
};

// Expects the same 16-bit values, FP8 bytes, transposed bytes and amax from both (n
// values each), most of the bytes nonzero (a scale that keeps the values
// representable) and an amax above 0; prints the counts as "<tag> fused <what>: ...".
inline void expect_same_casts(const Fp8CastPair& p, int64_t n, const char* tag, const char* what) {
  const auto host = [](const DeviceBuffer& b) {
    std::vector<uint8_t> v(b.bytes());
    GPUVS_CUDA_CHECK(cudaMemcpy(v.data(), b.get(), v.size(), cudaMemcpyDeviceToHost));
    return v;
  };
  const auto r16 = host(*p.value16[0]), f16 = host(*p.value16[1]);
  const auto q0 = host(*p.out[0]), q1 = host(*p.out[1]);
  const auto t0 = host(*p.out_t[0]), t1 = host(*p.out_t[1]);
  int64_t bad16 = 0, bad = 0, bad_t = 0, nonzero = 0;
  for (size_t i = 0; i + 1 < r16.size(); i += 2)
    bad16 += r16[i] != f16[i] || r16[i + 1] != f16[i + 1];
  for (size_t i = 0; i < size_t(n); ++i) {
    bad += q0[i] != q1[i];
    bad_t += t0[i] != t1[i];
    nonzero += (q0[i] & 0x7F) != 0;
  }
  bert::Fp8Meta m0{}, m1{};
  GPUVS_CUDA_CHECK(cudaMemcpy(&m0, p.meta[0]->get(), sizeof m0, cudaMemcpyDeviceToHost));
  GPUVS_CUDA_CHECK(cudaMemcpy(&m1, p.meta[1]->get(), sizeof m1, cudaMemcpyDeviceToHost));
  std::printf(
      "%s fused %s: %lld / %lld 16-bit values differ, %lld FP8 bytes, %lld transposed (%lld "
      "nonzero); amax %g (unfused %g)\n",
      tag, what, (long long)bad16, (long long)n, (long long)bad, (long long)bad_t,
      (long long)nonzero, m1.amax, m0.amax);
  EXPECT_EQ(bad16, 0) << what;
  EXPECT_EQ(bad, 0) << what;
  EXPECT_EQ(bad_t, 0) << what;
  EXPECT_GT(nonzero, n / 2) << what << ": the scale keeps most values representable";
  EXPECT_GT(m0.amax, 0.f) << what;
  EXPECT_EQ(m1.amax, m0.amax) << what;
}

}  // namespace gpuvs::models
