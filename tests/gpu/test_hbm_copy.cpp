// The HBM copy benchmark end to end on GPU 0 (quick options), and its validator:
// a pattern corrupted in one word is found, with the right index.
#include <fmt/format.h>

#include "bench/pattern.h"
#include "bench/registry.h"
#include "gpu/check.h"
#include "gpu/device.h"
#include "gpu/probe.h"
#include "gpu_test_util.h"

namespace gpuvs {
namespace {

TEST(HbmCopy, QuickRunIsValidPlausibleAndRecordsClocks) {
  GPUVS_REQUIRE_GPU();
  const SystemInfo system = probe_system();
  BenchContext ctx{system, 0, quick_options(), true, steady_wall_clock()};
  const std::vector<Result> results = run_hbm_copy(ctx);
  ASSERT_EQ(results.size(), 1u);
  const Result& r = results[0];
  EXPECT_EQ(r.id, "memory.hbm.copy");
  EXPECT_EQ(r.status, Status::kOk) << r.status_reason;
  EXPECT_EQ(r.unit, "B/s");
  EXPECT_GT(r.value, 1e11);  // any GPU of the last decade copies faster than 100 GB/s
  if (r.peak) {
    EXPECT_EQ(r.peak->kind, "derived");
    EXPECT_LT(r.value, 1.05 * r.peak->value) << "faster than the memory can go";
  }
  EXPECT_GE(r.stats.samples, 3);
  EXPECT_NE(r.validation.find("equal the source pattern"), std::string::npos) << r.validation;
  ASSERT_TRUE(r.clocks.has_value());
  ASSERT_TRUE(r.timing.has_value());
  EXPECT_GE(r.timing->iterations_per_sample, 1);
}

TEST(Pattern, CheckFindsOneCorruptedWord) {
  GPUVS_REQUIRE_GPU();
  const size_t bytes = size_t{64} << 20;
  DeviceBuffer buf(bytes);
  Stream stream;
  fill_pattern(buf.get(), bytes, false, stream.get());
  PatternCheck ok = check_pattern(buf.get(), bytes, stream.get());
  EXPECT_EQ(ok.words, bytes / 4);
  EXPECT_EQ(ok.mismatches, 0u);

  const size_t bad_word = 1234567;
  GPUVS_CUDA_CHECK(cudaMemsetAsync(buf.as<uint32_t>() + bad_word, 0x5A, 4, stream.get()));
  const PatternCheck bad = check_pattern(buf.get(), bytes, stream.get());
  EXPECT_EQ(bad.mismatches, 1u);
  EXPECT_EQ(bad.first_bad, bad_word);

  fill_pattern(buf.get(), bytes, /*poison=*/true, stream.get());
  EXPECT_EQ(check_pattern(buf.get(), bytes, stream.get()).mismatches, bytes / 4)
      << "poison must differ from the pattern in every word";
}

}  // namespace
}  // namespace gpuvs
