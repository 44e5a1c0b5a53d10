// The region timer's bookkeeping (measure/region_log.h) on a fake clock: regions from
// marks and scopes, per-name totals over steps in first-seen order, stop and the time
// between scopes counting for nobody, enable and disable, reuse of stamps, the fold
// between steps past kMaxMarks.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "measure/region_log.h"

namespace gpuvs {
namespace {

// A stamp is the fake time when it was recorded; the queue is the clock itself.
struct FakeClock {
  struct Queue {
    double* now = nullptr;
  };
  struct Stamp {
    int id = -1;
    double at = -1.0;
  };
  Stamp make() { return Stamp{made++, -1.0}; }
  void record(Stamp& s, Queue q) { s.at = *q.now; }
  double seconds(Stamp& from, Stamp& to) {
    ++waits;
    return to.at - from.at;
  }
  int made = 0;
  int waits = 0;
};

using Timer = BasicRegionTimer<FakeClock>;
using Totals = std::vector<std::pair<std::string, double>>;

class RegionLog : public ::testing::Test {
 protected:
  // Advances the fake time by dt, then marks.
  void mark_after(double dt, const char* name) {
    now += dt;
    timer.mark(name, q);
  }
  void stop_after(double dt) {
    now += dt;
    timer.stop(q);
  }
  double now = 100.0;
  FakeClock::Queue q{&now};
  Timer timer;
};

TEST_F(RegionLog, MarksTimeFromOneToTheNextAndStopEndsTheLast) {
  timer.enable(true);
  mark_after(0, "fwd embeddings");
  mark_after(2, "fwd qkv");
  mark_after(3, "loss");
  stop_after(5);
  EXPECT_EQ(timer.totals(), (Totals{{"fwd embeddings", 2}, {"fwd qkv", 3}, {"loss", 5}}));
}

TEST_F(RegionLog, NamesAddUpOverLayersAndStepsInFirstSeenOrder) {
  timer.enable(true);
  for (int step = 0; step < 3; ++step) {
    for (int layer = 0; layer < 2; ++layer) {
      mark_after(0, "fwd qkv");
      mark_after(1, "fwd ffn1+gelu");
      mark_after(2, "fwd qkv");  // a name seen before keeps its place
    }
    mark_after(0.5, "adamw");
    stop_after(4);
  }
  EXPECT_EQ(
      timer.totals(),
      (Totals{{"fwd qkv", 3 * (1 + 0 + 1 + 0.5)}, {"fwd ffn1+gelu", 3 * 2 * 2}, {"adamw", 3 * 4}}));
}

TEST_F(RegionLog, ScopesTimeTheirBodyAndNotTheGapsBetweenThem) {
  timer.enable(true);
  now += 1;
  {
    Timer::Scope s(timer, std::string("fwd conv1"), q);  // a name that does not outlive the call
    now += 7;
  }
  now += 100;  // between scopes: nobody's
  {
    Timer::Scope s(timer, "fwd bn1", q);
    now += 2;
  }
  {
    Timer::Scope s(timer, "fwd conv1", q);
    now += 1;
  }
  EXPECT_EQ(timer.totals(), (Totals{{"fwd conv1", 8}, {"fwd bn1", 2}}));
}

TEST_F(RegionLog, DisabledRecordsNothing) {
  EXPECT_FALSE(timer.enabled());
  mark_after(0, "fwd qkv");
  { Timer::Scope s(timer, "fwd fc", q); }
  stop_after(1);
  EXPECT_TRUE(timer.totals().empty());
  EXPECT_EQ(timer.clock().made, 0);
}

TEST_F(RegionLog, EnablingStartsANewProfileAndDisablingKeepsTheLastOne) {
  timer.enable(true);
  mark_after(0, "old");
  stop_after(1);
  timer.enable(false);
  EXPECT_EQ(timer.totals(), (Totals{{"old", 1}}));
  mark_after(0, "ignored");
  stop_after(1);
  EXPECT_EQ(timer.totals(), (Totals{{"old", 1}}));
  timer.enable(true);
  timer.enable(true);  // already on: keeps what it has
  mark_after(0, "new");
  stop_after(3);
  EXPECT_EQ(timer.totals(), (Totals{{"new", 3}}));
}

TEST_F(RegionLog, AnOpenRegionCountsOnceItEnds) {
  timer.enable(true);
  mark_after(0, "a");
  mark_after(1, "b");
  EXPECT_EQ(timer.totals(), (Totals{{"a", 1}, {"b", 0}}));
  stop_after(2);
  EXPECT_EQ(timer.totals(), (Totals{{"a", 1}, {"b", 2}}));
}

TEST_F(RegionLog, StampsAreReusedFromStepToStep) {
  timer.enable(true);
  for (int step = 0; step < 5; ++step) {
    mark_after(0, "a");
    mark_after(1, "b");
    stop_after(1);
    timer.totals();
  }
  EXPECT_EQ(timer.clock().made, 3);
  EXPECT_EQ(timer.totals(), (Totals{{"a", 5}, {"b", 5}}));
}

TEST_F(RegionLog, ManyMarksFoldAtAStopNotInsideAStep) {
  timer.enable(true);
  const size_t per_step = 1000;
  size_t marks = 0;
  while (timer.clock().waits == 0) {
    for (size_t i = 0; i + 1 < per_step; ++i)
      mark_after(1, i % 2 ? "odd" : "even");
    ASSERT_EQ(timer.clock().waits, 0) << "folded inside a step";
    stop_after(1);
    marks += per_step;
    ASSERT_LE(marks, Timer::kMaxMarks + per_step);
  }
  EXPECT_GE(marks, Timer::kMaxMarks);
  const Totals t = timer.totals();
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].first, "even");
  EXPECT_DOUBLE_EQ(t[0].second + t[1].second, static_cast<double>(marks - marks / per_step));
}

}  // namespace
}  // namespace gpuvs
