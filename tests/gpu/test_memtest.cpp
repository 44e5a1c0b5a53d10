// The memory test on a GPU (check/memtest.h): clean memory has no errors in any
// pattern, a word corrupted between a write and its read-back is found with its
// address and bits, every error is counted while only the first are recorded, and
// the default run takes at least 90 % of the free memory. Skipped without a GPU.
#include <gtest/gtest.h>

#include <cstdint>

#include "check/memtest.h"
#include "gpu/check.h"
#include "gpu_test_util.h"

namespace gpuvs::check {
namespace {

MemtestOptions small(size_t bytes) {
  MemtestOptions o;
  o.bytes = bytes;
  o.chunk_bytes = size_t{16} << 20;  // several chunks and a short tail
  return o;
}

TEST(Memtest, CleanMemoryHasNoErrorsInAnyPattern) {
  GPUVS_REQUIRE_GPU();
  const size_t bytes = (size_t{40} << 20) + 12;
  const MemtestResult r = run_memtest(0, small(bytes));
  EXPECT_EQ(r.tested_bytes, bytes);
  ASSERT_EQ(r.passes.size(), 5u);
  for (const MemtestPass& p : r.passes) {
    EXPECT_EQ(p.errors, 0u) << p.name;
    EXPECT_GT(p.sweeps, 0) << p.name;
  }
  EXPECT_EQ(r.errors, 0u);
  EXPECT_TRUE(r.ranges.empty());
  EXPECT_GT(r.bandwidth, 0);
}

// Writes `value` into word `index` of chunk `chunk` once, after the first pattern fill.
struct Injector {
  size_t chunk = 1;
  size_t index = 1000;
  uint32_t value = 0x101;  // the first fill is walking ones, bit 0: 0x1
  int words = 1;
  int calls = 0;
  const uint32_t* target = nullptr;
  void operator()(std::span<const MemtestChunk> chunks, cudaStream_t s) {
    if (calls++ != 0) return;
    uint32_t* w = chunks[chunk].words + index;
    target = w;
    std::vector<uint32_t> v(static_cast<size_t>(words), value);
    GPUVS_CUDA_CHECK(
        cudaMemcpyAsync(w, v.data(), v.size() * sizeof(uint32_t), cudaMemcpyHostToDevice, s));
  }
};

TEST(Memtest, AWordCorruptedAfterItsWriteIsFoundWithItsAddress) {
  GPUVS_REQUIRE_GPU();
  Injector inject;
  MemtestOptions o = small(size_t{40} << 20);
  o.after_write = std::ref(inject);
  const MemtestResult r = run_memtest(0, o);
  // Found in walking ones (the pass whose write was disturbed), nowhere else: the next
  // write repairs the word.
  EXPECT_EQ(r.errors, 1u);
  ASSERT_EQ(r.passes.size(), 5u);
  EXPECT_EQ(r.passes[0].errors, 1u);
  ASSERT_EQ(r.recorded.size(), 1u);
  EXPECT_EQ(r.recorded[0].address, reinterpret_cast<uint64_t>(inject.target));
  EXPECT_EQ(r.recorded[0].expected, 0x1u);
  EXPECT_EQ(r.recorded[0].actual, 0x101u);
  ASSERT_EQ(r.ranges.size(), 1u);
  EXPECT_EQ(r.ranges[0].flipped, 0x100u);
  EXPECT_TRUE(r.ranges[0].stuck_high);
  EXPECT_FALSE(r.ranges[0].stuck_low);
}

TEST(Memtest, EveryErrorIsCountedAndTheFirstAreRecorded) {
  GPUVS_REQUIRE_GPU();
  Injector inject;
  inject.words = 100;
  MemtestOptions o = small(size_t{40} << 20);
  o.max_records = 8;
  o.after_write = std::ref(inject);
  const MemtestResult r = run_memtest(0, o);
  EXPECT_EQ(r.errors, 100u);
  EXPECT_EQ(r.recorded.size(), 8u);
  EXPECT_TRUE(r.truncated());
  ASSERT_EQ(r.ranges.size(), 1u);  // 100 neighbouring words: one range
}

TEST(Memtest, DefaultRunTestsAtLeastNinetyPercentOfFreeMemory) {
  GPUVS_REQUIRE_GPU();
  std::vector<std::string> steps;
  MemtestOptions o;
  o.progress = [&](const std::string& s) { steps.push_back(s); };
  const MemtestResult r = run_memtest(0, o);
  EXPECT_GE(r.fraction_of_free(), 0.90) << r.tested_bytes << " of " << r.free_bytes;
  EXPECT_EQ(r.errors, 0u) << "this GPU's memory returned wrong values";
  EXPECT_EQ(steps.size(), 5u);
  std::printf("memory test: %.1f GB of %.1f GB free in %.1f s (%.0f GB/s moved)\n",
              r.tested_bytes / 1e9, r.free_bytes / 1e9, r.seconds, r.bandwidth / 1e9);
}

}  // namespace
}  // namespace gpuvs::check
