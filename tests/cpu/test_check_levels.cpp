// The table of check levels (a registered level is found, replaced, kept in order)
// and one GPU's readings combined over a whole check: the counters from before the
// first test, the rest from the end, the Xid events of every window.
#include <gtest/gtest.h>

#include "check/levels.h"

namespace gpuvs::check {
namespace {

void no_op(const nvml::Library&, const CheckRequest&, CheckReport&) {}

TEST(CheckLevels, RegisteredLevelsAreFoundInOrder) {
  ASSERT_NE(find_level(1), nullptr);
  EXPECT_EQ(find_level(1)->name, "health");
  register_level({3, "three", "test level 3", no_op});
  register_level({2, "two", "test level 2", no_op});
  ASSERT_EQ(levels().size(), 3u);
  EXPECT_EQ(levels()[1].number, 2);
  EXPECT_EQ(levels()[2].number, 3);
  register_level({2, "two again", "replaced", no_op});  // the same number replaces
  EXPECT_EQ(levels().size(), 3u);
  EXPECT_EQ(find_level(2)->name, "two again");
  EXPECT_EQ(find_level(4), nullptr);
}

TEST(CheckLevels, ReadingsCombineOverTheWholeCheck) {
  GpuReadings start, during, end;
  start.first.ecc_uncorrected_volatile = 0;
  start.window_s = 0;
  start.xid_watched = true;
  during.xids = {79};
  during.window_s = 120;
  during.xid_watched = true;
  end.first.ecc_uncorrected_volatile = 2;
  end.last.ecc_uncorrected_volatile = 2;
  end.xid_watched = true;
  end.window_s = 1;
  end.temperature_c = 71;
  const GpuReadings c = combine_readings(start, &during, end);
  EXPECT_EQ(c.first.ecc_uncorrected_volatile, 0u);  // before the first test
  EXPECT_EQ(c.last.ecc_uncorrected_volatile, 2u);   // after the load: it moved
  EXPECT_EQ(c.xids, std::vector<unsigned long long>{79});
  EXPECT_DOUBLE_EQ(c.window_s, 121);
  EXPECT_EQ(c.temperature_c, 71);
  EXPECT_TRUE(c.xid_watched);
  // judge_level1 over it: the uncorrected errors that appeared and the Xid 79 fail.
  const GpuVerdict v = judge_level1(c);
  EXPECT_EQ(v.status, Status::kFail);
  bool xid = false, ecc = false;
  for (const TestVerdict& t : v.tests) {
    if (t.test == "xid") xid = t.status == Status::kFail;
    if (t.test == "ecc.uncorrected") ecc = t.status == Status::kFail;
  }
  EXPECT_TRUE(xid);
  EXPECT_TRUE(ecc);
  // No watch during the load: what the end says about the watch stands.
  during.xid_watched = false;
  during.xid_unwatched_reason = "no event set";
  const GpuReadings unwatched = combine_readings(start, &during, end);
  EXPECT_FALSE(unwatched.xid_watched);
  EXPECT_EQ(unwatched.xid_unwatched_reason, "no event set");
  EXPECT_EQ(combine_readings(start, nullptr, end).window_s, 1);
}

}  // namespace
}  // namespace gpuvs::check
