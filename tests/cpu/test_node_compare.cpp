// The node's GEMM verdict (check/node_compare.h): repeatable bits, bits that match the
// other GPUs of the model, a GPU more than 5 % below the node's median flagged (8 %
// is; 3 % is not), GPUs of another model compared only among themselves, one GPU
// alone never slow.
#include <gtest/gtest.h>

#include "check/node_compare.h"

namespace gpuvs::check {
namespace {

GemmRunFigures gpu(int index, double tflops, uint64_t hash = 42, std::string name = "H200") {
  return {index, std::move(name), "bf16", {hash, hash, hash}, tflops * 1e12};
}

TEST(NodeCompare, HealthyNodeRaisesNothing) {
  const auto v = judge_node({gpu(0, 800), gpu(1, 790), gpu(2, 805), gpu(3, 780)});
  ASSERT_EQ(v.size(), 4u);
  for (const GemmNodeVerdict& g : v) {
    EXPECT_TRUE(g.repeatable);
    EXPECT_TRUE(g.matches_node);
    EXPECT_FALSE(g.slow) << g.gpu;  // 780 is 2 % below the median 795
    EXPECT_TRUE(g.reason.empty()) << g.reason;
    EXPECT_EQ(g.peers, 4);
  }
  EXPECT_DOUBLE_EQ(v[0].median_flops, 795e12);
}

TEST(NodeCompare, AGpuEightPercentSlowerIsFlagged) {
  const auto v = judge_node({gpu(0, 800), gpu(1, 800), gpu(2, 736), gpu(3, 800)});
  EXPECT_FALSE(v[0].slow);
  EXPECT_TRUE(v[2].slow);
  EXPECT_NE(v[2].reason.find("8.0 % below the node's median 800.0"), std::string::npos)
      << v[2].reason;
}

TEST(NodeCompare, BitsThatDifferFromThePeersOrBetweenRunsAreFlagged) {
  GemmRunFigures flaky = gpu(1, 800);
  flaky.hashes = {42, 43, 42};
  const auto v = judge_node({gpu(0, 800), flaky, gpu(2, 800, 7)});
  EXPECT_TRUE(v[0].repeatable && v[0].matches_node);
  EXPECT_FALSE(v[1].repeatable);
  EXPECT_TRUE(v[1].matches_node);  // its first run agrees with the node
  EXPECT_FALSE(v[2].matches_node);
  EXPECT_NE(v[2].reason.find("differ from the other 2 H200(s)"), std::string::npos) << v[2].reason;
}

TEST(NodeCompare, OtherModelsAndLoneGpusAreNotCompared) {
  const auto v = judge_node({gpu(0, 800), gpu(1, 400, 99, "A100"), gpu(2, 790)});
  EXPECT_FALSE(v[1].slow);
  EXPECT_TRUE(v[1].matches_node);
  EXPECT_EQ(v[1].peers, 1);
  EXPECT_EQ(v[0].peers, 2);
  const auto alone = judge_node({gpu(0, 100)});
  EXPECT_FALSE(alone[0].slow);
  EXPECT_TRUE(alone[0].matches_node);
}

}  // namespace
}  // namespace gpuvs::check
