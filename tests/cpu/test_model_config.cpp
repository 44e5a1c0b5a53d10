// Names of modes and precisions: every value round-trips, unknown names are refused.
#include <gtest/gtest.h>

#include "models/config.h"

namespace gpuvs::models {
namespace {

TEST(ModelConfig, ModesRoundTrip) {
  for (Mode m : {Mode::kTrain, Mode::kInfer}) {
    const auto parsed = mode_from_string(to_string(m));
    ASSERT_TRUE(parsed.has_value()) << to_string(m);
    EXPECT_EQ(*parsed, m);
  }
  EXPECT_EQ(to_string(Mode::kTrain), "train");
  EXPECT_EQ(to_string(Mode::kInfer), "infer");
}

TEST(ModelConfig, PrecisionsRoundTrip) {
  for (Precision p :
       {Precision::kFp32, Precision::kTf32, Precision::kFp16, Precision::kBf16, Precision::kFp8}) {
    const auto parsed = precision_from_string(to_string(p));
    ASSERT_TRUE(parsed.has_value()) << to_string(p);
    EXPECT_EQ(*parsed, p);
  }
  EXPECT_EQ(to_string(Precision::kBf16), "bf16");
  EXPECT_EQ(to_string(Precision::kTf32), "tf32");
}

TEST(ModelConfig, UnknownNamesRefused) {
  EXPECT_FALSE(mode_from_string("training").has_value());
  EXPECT_FALSE(mode_from_string("").has_value());
  EXPECT_FALSE(precision_from_string("FP16").has_value());
  EXPECT_FALSE(precision_from_string("int8").has_value());
  EXPECT_FALSE(attention_from_string("flash").has_value());
}

TEST(ModelConfig, AttentionKindsRoundTrip) {
  for (const Attention a : {Attention::kUnfused, Attention::kFused}) {
    const auto back = attention_from_string(to_string(a));
    ASSERT_TRUE(back.has_value()) << to_string(a);
    EXPECT_EQ(*back, a);
  }
  EXPECT_EQ(to_string(Attention::kFused), "fused");
}

// fp8 is refused below compute capability 8.9 with a reason that names the GPU's
// capability (what `gpuvs model bert-large --precision fp8` prints, exit 2, on an
// Ampere GPU; the H200s run the accepting side).
TEST(ModelConfig, Fp8NeedsComputeCapability89) {
  for (const auto& [major, minor] : {std::pair{7, 0}, {7, 5}, {8, 0}, {8, 6}, {8, 7}}) {
    const auto why = fp8_refusal(major, minor);
    ASSERT_TRUE(why.has_value()) << major << "." << minor;
    EXPECT_NE(why->find("fp8"), std::string::npos) << *why;
    EXPECT_NE(why->find("8.9"), std::string::npos) << *why;
    EXPECT_NE(why->find(std::to_string(major) + "." + std::to_string(minor)), std::string::npos)
        << *why;
  }
  for (const auto& [major, minor] : {std::pair{8, 9}, {9, 0}, {10, 0}, {12, 0}})
    EXPECT_FALSE(fp8_refusal(major, minor).has_value()) << major << "." << minor;
}

TEST(ModelConfig, Defaults) {
  const ModelConfig c;
  EXPECT_EQ(c.model, "resnet50");
  EXPECT_EQ(c.mode, Mode::kTrain);
  EXPECT_EQ(c.precision, Precision::kBf16);
  EXPECT_EQ(c.batch, 256);
  EXPECT_EQ(c.accumulate, 1);
  EXPECT_FALSE(c.deterministic);
  EXPECT_EQ(c.attention, Attention::kUnfused);
}

}  // namespace
}  // namespace gpuvs::models
