// The harness's rules, driven by a fake clock: calibration, warm-up, stopping
// rules, cold flushes, and the Result it assembles (units, efficiency, validity).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <stdexcept>

#include "core/error.h"
#include "measure/harness.h"

namespace gpuvs {
namespace {

class FakeClock final : public WallClock {
 public:
  double now_s() override { return now; }
  double now = 1000.0;
};

// Each batch "takes" per_iteration(batch index) * iterations seconds of fake time.
class FakeTimed final : public Timed {
 public:
  FakeTimed(FakeClock& clock, std::function<double(int)> per_iteration)
      : clock_(clock), per_iteration_(std::move(per_iteration)) {}
  double run(int64_t iterations) override {
    const double t = per_iteration_(batches) * static_cast<double>(iterations);
    ++batches;
    clock_.now += t + 1e-5;  // host overhead between batches
    last_iterations = iterations;
    return t;
  }
  void flush() override {
    ++flushes;
    flushed_before_batch.push_back(batches);
  }
  int batches = 0;
  int flushes = 0;
  int64_t last_iterations = 0;
  std::vector<int> flushed_before_batch;

 private:
  FakeClock& clock_;
  std::function<double(int)> per_iteration_;
};

class FakeClockWatch final : public ClockWatch {
 public:
  void start() override { ++starts; }
  ClockRecord stop() override {
    ++stops;
    ClockRecord r;
    r.sm_mhz_median = 1980;
    r.throttle_reasons = {"sw_power_cap"};
    r.samples = 7;
    return r;
  }
  int starts = 0;
  int stops = 0;
};

TEST(Harness, SteadyWorkStopsOnNoiseWithExactMedian) {
  FakeClock clock;
  FakeTimed timed(clock, [](int) { return 2e-3; });  // 2 ms per iteration
  const Measurement m = measure(timed, clock, MeasureOptions{});
  EXPECT_EQ(m.stopped_by, "noise");
  EXPECT_TRUE(m.warmed_up);
  EXPECT_EQ(m.iterations_per_sample, 1);  // one iteration already lasts >= 1 ms
  ASSERT_EQ(m.seconds_per_iteration.size(), 10u);
  for (double s : m.seconds_per_iteration)
    EXPECT_DOUBLE_EQ(s, 2e-3);
}

TEST(Harness, CalibratesBatchToMinimumSampleLength) {
  FakeClock clock;
  FakeTimed timed(clock, [](int) { return 1e-6; });  // 1 µs kernels
  MeasureOptions o;
  o.min_sample_s = 1e-3;
  const Measurement m = measure(timed, clock, o);
  EXPECT_GE(m.iterations_per_sample, 1000);
  EXPECT_LE(m.iterations_per_sample, 4000);  // not wildly more than needed
  EXPECT_GE(m.iterations_per_sample * 1e-6, o.min_sample_s);
  EXPECT_NEAR(m.seconds_per_iteration.front(), 1e-6, 1e-15);
}

TEST(Harness, CalibrationRespectsIterationCap) {
  FakeClock clock;
  FakeTimed timed(clock, [](int) { return 1e-9; });
  MeasureOptions o;
  o.max_iterations_per_sample = 64;
  const Measurement m = measure(timed, clock, o);
  EXPECT_EQ(m.iterations_per_sample, 64);
  EXPECT_EQ(timed.last_iterations, 64);
}

TEST(Harness, WarmUpWaitsUntilConsecutiveBatchesAgree) {
  FakeClock clock;
  // First five batches slow (module load, clocks ramping), then steady.
  FakeTimed timed(clock, [](int b) { return b < 5 ? 10e-3 / (b + 1) : 2e-3; });
  const Measurement m = measure(timed, clock, MeasureOptions{});
  EXPECT_TRUE(m.warmed_up);
  EXPECT_GE(m.warmup_batches, 6);
  for (double s : m.seconds_per_iteration)
    EXPECT_DOUBLE_EQ(s, 2e-3);  // no slow sample kept
}

TEST(Harness, WarmUpThatNeverAgreesIsRecordedNotHidden) {
  FakeClock clock;
  FakeTimed timed(clock, [](int b) { return b % 2 ? 1e-3 : 2e-3; });  // alternates 2x
  MeasureOptions o;
  o.max_warmup_batches = 6;
  o.time_cap_s = 0.05;
  const Measurement m = measure(timed, clock, o);
  EXPECT_FALSE(m.warmed_up);
  EXPECT_EQ(m.warmup_batches, 6);
  EXPECT_EQ(m.stopped_by, "time_cap");
}

TEST(Harness, NoisyWorkStopsAtTimeCap) {
  FakeClock clock;
  FakeTimed timed(clock, [](int b) { return b % 2 ? 1.0e-3 : 1.1e-3; });  // ~5 % noise
  MeasureOptions o;
  o.warmup_agreement = 0.2;
  o.time_cap_s = 0.1;
  o.max_samples = 100000;
  const Measurement m = measure(timed, clock, o);
  EXPECT_EQ(m.stopped_by, "time_cap");
  // 0.1 s of ~1 ms samples (plus the 10 µs host gap each): about 95 of them.
  EXPECT_GT(m.seconds_per_iteration.size(), 80u);
  EXPECT_LT(m.seconds_per_iteration.size(), 110u);
}

TEST(Harness, MaxSamplesStops) {
  FakeClock clock;
  FakeTimed timed(clock, [](int b) { return b % 2 ? 1.0e-3 : 1.1e-3; });
  MeasureOptions o;
  o.warmup_agreement = 0.2;
  o.max_samples = 12;
  o.time_cap_s = 100;
  const Measurement m = measure(timed, clock, o);
  EXPECT_EQ(m.stopped_by, "max_samples");
  EXPECT_EQ(m.seconds_per_iteration.size(), 12u);
}

TEST(Harness, LongSamplesStillGetAFloorOfThree) {
  FakeClock clock;
  FakeTimed timed(clock, [](int b) { return b % 2 ? 1.0 : 1.5; });  // seconds each
  MeasureOptions o;
  o.time_cap_s = 0.5;
  o.warmup_cap_s = 0.1;
  const Measurement m = measure(timed, clock, o);
  EXPECT_EQ(m.stopped_by, "time_cap");
  EXPECT_EQ(m.seconds_per_iteration.size(), 3u);
}

TEST(Harness, ColdFlushesBeforeEverySampleAndUsesSingleIterations) {
  FakeClock clock;
  FakeTimed timed(clock, [](int) { return 1e-6; });
  MeasureOptions o;
  o.cold = true;
  const Measurement m = measure(timed, clock, o);
  EXPECT_EQ(m.iterations_per_sample, 1);
  // Every sampling batch was preceded by a flush.
  const int first_sample_batch = m.warmup_batches;
  for (int b = first_sample_batch; b < timed.batches; ++b) {
    EXPECT_NE(std::find(timed.flushed_before_batch.begin(), timed.flushed_before_batch.end(), b),
              timed.flushed_before_batch.end())
        << "batch " << b << " was not flushed";
  }
}

TEST(Harness, InvalidTimerDurationThrows) {
  FakeClock clock;
  FakeTimed timed(clock, [](int) { return std::nan(""); });
  EXPECT_THROW(measure(timed, clock, MeasureOptions{}), Error);
}

TEST(Harness, InvalidOptionsAreAUsageError) {
  FakeClock clock;
  FakeTimed timed(clock, [](int) { return 1e-3; });
  MeasureOptions o;
  o.min_samples = 0;
  try {
    measure(timed, clock, o);
    FAIL() << "expected UsageError";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kUsage);
  }
}

ResultSpec copy_spec() {
  ResultSpec spec;
  spec.id = "memory.hbm.copy";
  spec.name = "HBM copy";
  spec.devices = {0};
  spec.parameters["bytes_per_array"] = int64_t{1} << 30;
  spec.headline = Headline::kBandwidth;
  spec.bytes_per_iteration = 2.0 * (1 << 30);
  spec.peak = Peak{4.8e12, "B/s", "datasheet", "test"};
  return spec;
}

TEST(MeasureResult, BandwidthEfficiencyClocksAndValidation) {
  FakeClock clock;
  FakeTimed timed(clock, [](int) { return 0.5e-3; });
  FakeClockWatch watch;
  bool validated = false;
  const Result r = measure_result(copy_spec(), timed, clock, MeasureOptions{}, &watch, [&] {
    validated = true;
    return Validation{true, "checksum ok"};
  });
  EXPECT_TRUE(validated);
  EXPECT_EQ(r.status, Status::kOk);
  EXPECT_EQ(r.unit, "B/s");
  EXPECT_DOUBLE_EQ(r.value, 2.0 * (1 << 30) / 0.5e-3);
  EXPECT_DOUBLE_EQ(r.stats.median, r.value);
  ASSERT_TRUE(r.efficiency.has_value());
  EXPECT_NEAR(*r.efficiency, r.value / 4.8e12, 1e-12);
  EXPECT_EQ(r.validation, "checksum ok");
  ASSERT_TRUE(r.clocks.has_value());
  EXPECT_EQ(r.clocks->sm_mhz_median, 1980);
  EXPECT_EQ(watch.starts, 1);
  EXPECT_EQ(watch.stops, 1);
  ASSERT_TRUE(r.timing.has_value());
  EXPECT_EQ(r.timing->stopped_by, "noise");
  EXPECT_EQ(r.samples.size(), static_cast<size_t>(r.stats.samples));
  ASSERT_TRUE(r.bytes_per_iteration.has_value());
  EXPECT_FALSE(r.flops_per_iteration.has_value());
}

TEST(MeasureResult, FailedValidationMarksInvalid) {
  FakeClock clock;
  FakeTimed timed(clock, [](int) { return 1e-3; });
  const Result r = measure_result(copy_spec(), timed, clock, MeasureOptions{}, nullptr, [] {
    return Validation{false, "3 of 1024 elements differ"};
  });
  EXPECT_EQ(r.status, Status::kInvalid);
  EXPECT_NE(r.status_reason.find("3 of 1024 elements differ"), std::string::npos);
  EXPECT_FALSE(r.clocks.has_value());
}

TEST(MeasureResult, LatencyHeadlineReportsSecondsPerIteration) {
  FakeClock clock;
  FakeTimed timed(clock, [](int) { return 2.5e-6; });
  ResultSpec spec;
  spec.id = "launch.empty_kernel";
  spec.name = "empty kernel";
  spec.headline = Headline::kLatency;
  const Result r = measure_result(spec, timed, clock, MeasureOptions{}, nullptr, nullptr);
  EXPECT_EQ(r.unit, "s");
  EXPECT_NEAR(r.value, 2.5e-6, 1e-15);
  EXPECT_EQ(r.validation, "none");
  EXPECT_FALSE(r.efficiency.has_value());
}

TEST(MeasureResult, PeakInAnotherUnitGivesNoEfficiency) {
  FakeClock clock;
  FakeTimed timed(clock, [](int) { return 1e-3; });
  ResultSpec spec = copy_spec();
  spec.peak = Peak{989e12, "FLOP/s", "datasheet", "test"};
  const Result r = measure_result(spec, timed, clock, MeasureOptions{}, nullptr, nullptr);
  EXPECT_TRUE(r.peak.has_value());
  EXPECT_FALSE(r.efficiency.has_value());
}

TEST(MeasureResult, DeclaringNoWorkIsAnError) {
  FakeClock clock;
  FakeTimed timed(clock, [](int) { return 1e-3; });
  ResultSpec spec = copy_spec();
  spec.bytes_per_iteration = 0;
  EXPECT_THROW(measure_result(spec, timed, clock, MeasureOptions{}, nullptr, nullptr), Error);
}

TEST(MeasureResult, ClockWatchIsStoppedWhenTheWorkThrows) {
  FakeClock clock;
  FakeTimed timed(clock, [](int b) -> double {
    if (b == 3) throw Error("CUDA error 700 (an illegal memory access)");
    return 1e-3;
  });
  FakeClockWatch watch;
  EXPECT_THROW(measure_result(copy_spec(), timed, clock, MeasureOptions{}, &watch, nullptr), Error);
  EXPECT_EQ(watch.starts, 1);
  EXPECT_EQ(watch.stops, 1);
}

}  // namespace
}  // namespace gpuvs
