// GEMM consistency on a GPU (check/gemm_consistency.h): BF16 and FP32 GEMMs of the
// fixed operands give the same bits on every run, a positive rate and a valid D, and
// every GPU of the machine agrees with the others (judged by check/node_compare.h).
// Skipped without a GPU.
#include <gtest/gtest.h>

#include "check/gemm_consistency.h"
#include "gpu/probe.h"
#include "gpu_test_util.h"

namespace gpuvs::check {
namespace {

TEST(GemmConsistency, RepeatedRunsGiveTheSameBitsOnEveryGpu) {
  GPUVS_REQUIRE_GPU();
  const SystemInfo system = probe_system();
  for (GemmPrecision p : {GemmPrecision::kBf16, GemmPrecision::kFp32}) {
    std::vector<GemmRunFigures> node;
    for (const GpuInfo& g : system.gpus) {
      GemmConsistencyOptions o;
      o.precision = p;
      o.shape = {2048, 2048, 2048};
      o.runs = 4;
      o.timing = tiny_options();
      const GemmConsistency c = run_gemm_consistency(system, g.index, o, steady_wall_clock());
      EXPECT_TRUE(c.valid) << c.validation;
      EXPECT_EQ(c.figures.hashes.size(), 4u);
      EXPECT_GT(c.figures.flops, 0);
      node.push_back(c.figures);
    }
    for (const GemmNodeVerdict& v : judge_node(node)) {
      EXPECT_TRUE(v.repeatable) << v.reason;
      EXPECT_TRUE(v.matches_node) << v.reason;
    }
  }
}

}  // namespace
}  // namespace gpuvs::check
