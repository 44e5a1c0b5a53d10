// The progress reporter's rules, driven by a fake clock into a string: the plain
// lines' form, their rate limit, the estimate from expected durations and from the
// mean, no estimate before one is possible, live's in-place line, off's silence.
#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "measure/progress.h"

namespace gpuvs {
namespace {

class FakeClock final : public WallClock {
 public:
  double now_s() override { return now; }
  double now = 500.0;
};

class StringSink final : public ProgressSink {
 public:
  void write(std::string_view text) override { text_ += text; }
  const std::string& text() const { return text_; }
  std::vector<std::string> lines() const {
    std::vector<std::string> out;
    std::istringstream in(text_);
    for (std::string line; std::getline(in, line);)
      out.push_back(line);
    return out;
  }
  void clear() { text_.clear(); }

 private:
  std::string text_;
};

struct Fixture {
  FakeClock clock;
  StringSink sink;
};

// A reporter in plain mode on the fake clock.
struct Plain : Fixture {
  Progress progress{ProgressMode::kPlain, sink, clock};
};

TEST(Progress, PlainWritesOneLinePerStepWithElapsedTimeAndCount) {
  Plain f;
  Progress& p = f.progress;
  p.begin(3);
  p.step("memory.hbm on GPU 0 (H200)");
  f.clock.now += 42;
  p.step("compute.gemm on GPU 0 (H200)");
  f.clock.now += 30;
  p.step("launch.overhead on GPU 0 (H200)");
  f.clock.now += 120;
  p.done();
  const std::vector<std::string> lines = f.sink.lines();
  ASSERT_EQ(lines.size(), 4u) << f.sink.text();
  EXPECT_EQ(lines[0], "gpuvs: [00:00] [1/3] memory.hbm on GPU 0 (H200)");
  // One step of 42 s finished: this one and the next are expected to take as long.
  EXPECT_EQ(lines[1], "gpuvs: [00:42] [2/3] compute.gemm on GPU 0 (H200) — ~1:24 left");
  // Mean of 42 s and 30 s is 36 s: the third step is expected to take that long.
  EXPECT_EQ(lines[2], "gpuvs: [01:12] [3/3] launch.overhead on GPU 0 (H200) — ~0:36 left");
  EXPECT_EQ(lines[3], "gpuvs: done in 3:12 (3 steps)");
  EXPECT_EQ(f.sink.text().find('\r'), std::string::npos);
  EXPECT_EQ(f.sink.text().find('\033'), std::string::npos);
}

TEST(Progress, NoEstimateBeforeTheFirstStepFinished) {
  Plain f;
  Progress& p = f.progress;
  p.begin(12);
  p.step("a");
  f.clock.now += 5;
  p.detail("half way");
  EXPECT_FALSE(p.seconds_left().has_value());
  EXPECT_EQ(f.sink.text().find("left"), std::string::npos) << f.sink.text();
  f.clock.now += 5;
  p.step("b");  // a took 10 s: 11 steps of 10 s are left
  ASSERT_TRUE(p.seconds_left().has_value());
  EXPECT_DOUBLE_EQ(*p.seconds_left(), 110);
  EXPECT_NE(f.sink.lines().back().find("— ~1:50 left"), std::string::npos) << f.sink.text();
  f.clock.now += 4;  // 4 s into b: its own share shrinks
  EXPECT_DOUBLE_EQ(*p.seconds_left(), 106);
  f.clock.now += 60;  // b overran its mean: nothing of it is counted as left
  EXPECT_DOUBLE_EQ(*p.seconds_left(), 100);
}

TEST(Progress, EstimateFromExpectedDurationsFromTheStart) {
  Plain f;
  Progress& p = f.progress;
  p.begin(3, {10, 20, 30});
  EXPECT_DOUBLE_EQ(*p.seconds_left(), 60);
  p.step("a");
  EXPECT_EQ(f.sink.lines().back(), "gpuvs: [00:00] [1/3] a — ~1:00 left");
  f.clock.now += 4;
  EXPECT_DOUBLE_EQ(*p.seconds_left(), 56);
  f.clock.now += 16;  // a took 20 s, twice its expectation: the others keep theirs
  p.step("b");
  EXPECT_DOUBLE_EQ(*p.seconds_left(), 50);
  p.step("c", 90);  // step()'s figure replaces begin()'s
  EXPECT_DOUBLE_EQ(*p.seconds_left(), 90);
}

TEST(Progress, MissingExpectationsFallBackOnTheMean) {
  Plain f;
  Progress& p = f.progress;
  p.begin(3, {0, 0, 100});  // only the last step's duration is known
  p.step("a", 8);
  EXPECT_FALSE(p.seconds_left().has_value()) << "step 2 is unknown until a step finished";
  f.clock.now += 8;
  p.step("b");
  EXPECT_DOUBLE_EQ(*p.seconds_left(), 8 + 100);
}

TEST(Progress, UnknownStepCountHasNoEstimate) {
  Plain f;
  Progress& p = f.progress;
  p.step("a");
  f.clock.now += 3;
  p.step("b");
  EXPECT_FALSE(p.seconds_left().has_value());
  EXPECT_EQ(f.sink.lines().back(), "gpuvs: [00:03] [2] b");
}

TEST(Progress, PlainDetailsAreRateLimitedAndTheLastOneIsKept) {
  Plain f;
  Progress& p = f.progress;
  p.begin(2);
  p.step("collectives.nccl on 2 GPU(s)");
  for (int i = 1; i <= 10; ++i) {  // ten details within 0.5 s of the step line
    f.clock.now += 0.05;
    p.detail("all_reduce size " + std::to_string(i));
  }
  ASSERT_EQ(f.sink.lines().size(), 1u) << f.sink.text();
  f.clock.now += 0.6;  // past the interval: the tick writes the last detail that waited
  p.tick();
  ASSERT_EQ(f.sink.lines().size(), 2u) << f.sink.text();
  EXPECT_EQ(f.sink.lines()[1],
            "gpuvs: [00:00] [1/2] collectives.nccl on 2 GPU(s): all_reduce size 10");
  p.tick();  // nothing waits
  EXPECT_EQ(f.sink.lines().size(), 2u);

  f.clock.now += 2;  // a detail after a quiet second is written at once
  p.detail("all_reduce size 11");
  EXPECT_EQ(f.sink.lines().size(), 3u);
  f.clock.now += 0.1;
  p.detail("all_reduce size 12");  // waits ...
  EXPECT_EQ(f.sink.lines().size(), 3u);
  p.step("collectives.algorithms on 2 GPU(s)");  // ... and is written before the next step
  const std::vector<std::string> lines = f.sink.lines();
  ASSERT_EQ(lines.size(), 5u) << f.sink.text();
  EXPECT_NE(lines[3].find("all_reduce size 12"), std::string::npos) << lines[3];
  EXPECT_NE(lines[4].find("[2/2] collectives.algorithms"), std::string::npos) << lines[4];

  f.clock.now += 0.2;
  p.detail("Ring LL");  // within a second of the step line: waits, then done() writes it
  p.done();
  ASSERT_EQ(f.sink.lines().size(), 7u) << f.sink.text();
  EXPECT_NE(f.sink.lines()[5].find("Ring LL"), std::string::npos);
  EXPECT_EQ(f.sink.lines()[6].rfind("gpuvs: done in", 0), 0u);
}

TEST(Progress, PlainDetailAfterTheIntervalWritesTheWaitingOneFirst) {
  Plain f;
  Progress& p = f.progress;
  p.begin(1);
  p.step("model on GPU 0 (H200)");
  f.clock.now += 0.3;
  p.detail("batch 4096: out of memory; trying 3072");
  f.clock.now += 5;  // the next candidate took a while: both are written, in order
  p.detail("batch 3072 fits (61.2 GB); trying 3584");
  const std::vector<std::string> lines = f.sink.lines();
  ASSERT_EQ(lines.size(), 3u) << f.sink.text();
  EXPECT_EQ(lines[1],
            "gpuvs: [00:00] [1/1] model on GPU 0 (H200): batch 4096: out of memory; "
            "trying 3072");
  EXPECT_EQ(lines[2],
            "gpuvs: [00:05] [1/1] model on GPU 0 (H200): batch 3072 fits (61.2 GB); "
            "trying 3584");
}

TEST(Progress, FinalLineCountsFailedSteps) {
  Plain f;
  Progress& p = f.progress;
  p.begin(2);
  p.step("a");
  p.fail("out of memory\nat batch 9");
  f.clock.now += 3725;
  p.step("b");
  p.done();
  p.done();  // once
  const std::vector<std::string> lines = f.sink.lines();
  ASSERT_EQ(lines.size(), 4u) << f.sink.text();
  EXPECT_EQ(lines[1], "gpuvs: [00:00] [1/2] a: failed: out of memory\\nat batch 9");
  EXPECT_EQ(lines[2], "gpuvs: [1:02:05] [2/2] b — ~1:02:05 left");
  EXPECT_EQ(lines[3], "gpuvs: done in 1:02:05 (2 steps, 1 failed)");
}

TEST(Progress, OffWritesNothing) {
  Fixture f;
  {
    Progress p(ProgressMode::kOff, f.sink, f.clock);
    p.begin(2);
    p.step("a");
    p.detail("x");
    p.fail("y");
    p.tick();
    p.done();
  }
  EXPECT_TRUE(f.sink.text().empty()) << f.sink.text();
}

TEST(Progress, LiveReplacesTheLineInPlaceAndClearsIt) {
  Fixture f;
  ProgressOptions o;
  o.width = 30;
  Progress p(ProgressMode::kLive, f.sink, f.clock, o);
  p.begin(2);
  p.step("memory.hbm on GPU 0 (H200)");
  EXPECT_EQ(f.sink.text(), "\r\033[Kgpuvs: [00:00] [1/2] memory.h");  // 29 columns
  f.sink.clear();
  p.detail("triad");  // every detail redraws: no rate limit on a terminal
  p.detail("dot");
  EXPECT_EQ(f.sink.text(),
            "\r\033[Kgpuvs: [00:00] [1/2] memory.h\r\033[Kgpuvs: [00:00] [1/2] memory.h");
  f.sink.clear();
  p.tick();  // the same second: nothing to redraw
  EXPECT_TRUE(f.sink.text().empty());
  f.clock.now += 1;
  p.tick();  // the clock moved on
  EXPECT_EQ(f.sink.text(), "\r\033[Kgpuvs: [00:01] [1/2] memory.h");
  f.sink.clear();
  p.done();
  EXPECT_EQ(f.sink.text(), "\r\033[K");
  EXPECT_EQ(f.sink.text().find('\n'), std::string::npos);
}

TEST(Progress, LiveCutsByCharactersNotBytes) {
  Fixture f;
  ProgressOptions o;
  o.width = 25;
  o.prefix = "";
  Progress p(ProgressMode::kLive, f.sink, f.clock, o);
  p.step("gemm 8192³ bf16");
  // "[00:00] [1] gemm 8192³ b" is 24 characters and 25 bytes.
  EXPECT_EQ(f.sink.text(), "\r\033[K[00:00] [1] gemm 8192³ b");
}

TEST(Progress, DestructorClearsLiveAndWritesAWaitingDetail) {
  Fixture f;
  {
    Progress p(ProgressMode::kLive, f.sink, f.clock);
    p.step("a");
  }
  EXPECT_EQ(f.sink.text().substr(f.sink.text().size() - 4), "\r\033[K");
  f.sink.clear();
  {
    Progress p(ProgressMode::kPlain, f.sink, f.clock);
    p.step("a");
    p.detail("building (cuDNN autotuning)");  // waits: within a second of the step
  }  // a command that threw: where it was is in the log, and no "done" line
  const std::vector<std::string> lines = f.sink.lines();
  ASSERT_EQ(lines.size(), 2u) << f.sink.text();
  EXPECT_NE(lines[1].find("building (cuDNN autotuning)"), std::string::npos);
}

TEST(Progress, ControlCharactersInNamesAreEscaped) {
  Plain f;
  Progress& p = f.progress;
  p.step("GPU \033[31mred\r");
  EXPECT_EQ(f.sink.text().find('\033'), std::string::npos) << f.sink.text();
  EXPECT_EQ(f.sink.text().find('\r'), std::string::npos) << f.sink.text();
}

// The ticker writes from its own thread: the test reads under the same lock.
class LockedSink final : public ProgressSink {
 public:
  void write(std::string_view text) override {
    const std::lock_guard lock(mutex_);
    text_ += text;
  }
  bool has(std::string_view part) {
    const std::lock_guard lock(mutex_);
    return text_.find(part) != std::string::npos;
  }

 private:
  std::mutex mutex_;
  std::string text_;
};

TEST(Progress, TickerThreadWritesAWaitingDetail) {
  LockedSink sink;
  ProgressOptions o;
  o.detail_interval_s = 0.05;
  o.tick_period_s = 0.01;
  {
    Progress p(ProgressMode::kPlain, sink, steady_wall_clock(), o);
    p.step("a");
    p.detail("waits for the ticker");
    // The ticker runs on the real clock: give it time to pass the interval.
    bool written = false;
    for (int i = 0; i < 500 && !written; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      written = sink.has("waits for the ticker");
    }
    EXPECT_TRUE(written) << "no tick wrote the detail within 5 s";
  }
}

TEST(Progress, DurationsFormat) {
  EXPECT_EQ(format_duration(0), "0:00");
  EXPECT_EQ(format_duration(41.6), "0:42");
  EXPECT_EQ(format_duration(90), "1:30");
  EXPECT_EQ(format_duration(3723), "1:02:03");
  EXPECT_EQ(format_duration(-5), "0:00");
}

}  // namespace
}  // namespace gpuvs
