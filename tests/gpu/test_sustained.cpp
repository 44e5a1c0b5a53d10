// The sustained load on a GPU, briefly (check/sustained.h): GEMMs ran, the memory test
// repeated beside them without an error, the GPU was polled throughout, and a healthy
// GPU shows no thermal or hardware slowdown. Skipped without a GPU.
#include <gtest/gtest.h>

#include "check/sustained.h"
#include "gpu_test_util.h"

namespace gpuvs::check {
namespace {

TEST(SustainedLoad, GemmsAndTheMemoryTestRunTogetherWhileTheGpuIsPolled) {
  GPUVS_REQUIRE_GPU();
  SustainedOptions o;
  o.duration_s = 6;
  o.memtest_options.bytes = size_t{2} << 30;  // a short round: several fit in the load
  const SustainedLoad r = run_sustained_load(0, o);
  EXPECT_GE(r.seconds, 6);
  EXPECT_GT(r.gemms, 0);
  EXPECT_GT(r.flops, 1e13);  // any tensor-core GPU of this decade
  EXPECT_GE(r.memtest_rounds, 1);
  EXPECT_EQ(r.memtest_errors, 0u);
  if (!r.sampler_note.empty()) GTEST_SKIP() << "no NVML samples: " << r.sampler_note;
  EXPECT_GE(r.samples.size(), 20u);  // 100 ms apart over 6 s
  SustainedRules rules;
  rules.settle_s = 2;
  const SustainedVerdict v = judge_sustained(r.samples, 0, rules);
  EXPECT_TRUE(v.slowdowns.empty()) << v.slowdowns[0];
  std::printf("sustained load: %.1f TFLOP/s, median %.0f W, SM %d-%d MHz, %d memory test rounds\n",
              r.flops / 1e12, v.median_power_w.value_or(0), v.sm_p5_mhz.value_or(0),
              v.sm_p95_mhz.value_or(0), r.memtest_rounds);
}

}  // namespace
}  // namespace gpuvs::check
