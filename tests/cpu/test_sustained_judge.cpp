// The sustained-load verdict (check/sustained_judge.h): a GPU at its power limit with a
// steady clock passes (power capping only noted), thermal or hardware slowdown fails,
// low power fails, a falling clock fails (a rising one does not), the ramp before the settling time
// is left out, and missing samples are a failure, never a pass.
#include <gtest/gtest.h>

#include <cmath>

#include "check/sustained_judge.h"

namespace gpuvs::check {
namespace {

// An H200 under BF16 load: 700 W limit, ~1500-1600 MHz once capped, ramping first.
std::vector<LoadSample> capped_run(double seconds = 60) {
  std::vector<LoadSample> out;
  for (double t = 0; t < seconds; t += 0.1) {
    LoadSample s;
    s.t_s = t;
    const bool ramp = t < 5;
    s.power_w = ramp ? 300 + 80 * t : 690 + 10 * std::sin(t);
    s.sm_mhz = ramp ? 1980 : 1500 + static_cast<int>(50 * std::sin(t));
    s.temperature_c = 60;
    if (!ramp) s.reasons = {"sw_power_cap"};
    out.push_back(s);
  }
  return out;
}

bool mentions(const std::vector<std::string>& lines, const std::string& text) {
  for (const std::string& l : lines)
    if (l.find(text) != std::string::npos) return true;
  return false;
}

TEST(SustainedJudge, PowerCappedSteadyGpuPasses) {
  const SustainedVerdict v = judge_sustained(capped_run(), 700);
  EXPECT_TRUE(v.pass) << (v.failures.empty() ? "" : v.failures[0]);
  EXPECT_TRUE(mentions(v.notes, "power-capped"));
  EXPECT_NEAR(*v.median_power_w, 690, 11);
  EXPECT_EQ(*v.temperature_max_c, 60);
  EXPECT_GT(v.settled_samples, 350);
}

TEST(SustainedJudge, ThermalOrHardwareSlowdownFails) {
  for (const char* reason :
       {"sw_thermal_slowdown", "hw_thermal_slowdown", "hw_slowdown", "hw_power_brake_slowdown"}) {
    auto samples = capped_run();
    samples[420].reasons.push_back(reason);
    const SustainedVerdict v = judge_sustained(samples, 700);
    EXPECT_FALSE(v.pass) << reason;
    EXPECT_TRUE(mentions(v.failures, reason)) << reason;
    EXPECT_EQ(v.slowdowns, std::vector<std::string>{reason});
  }
  EXPECT_FALSE(is_slowdown_fault("sw_power_cap"));
  EXPECT_FALSE(is_slowdown_fault("gpu_idle"));
}

TEST(SustainedJudge, PowerBelowNinetyPercentOfTheLimitFails) {
  auto samples = capped_run();
  for (LoadSample& s : samples)
    s.power_w = *s.power_w * 0.85;
  const SustainedVerdict v = judge_sustained(samples, 700);
  EXPECT_FALSE(v.pass);
  EXPECT_TRUE(mentions(v.failures, "below 90 % of the 700 W limit"));
}

TEST(SustainedJudge, TheRampIsLeftOutAndBoostIsNoFaultButAFallingClockFails) {
  // The ramp's low power would lower the median: it is before the settling time.
  SustainedRules rules;
  rules.settle_s = 10;
  auto ramped = capped_run();
  for (LoadSample& s : ramped)
    if (s.t_s < 10) s.power_w = 200;
  EXPECT_TRUE(judge_sustained(ramped, 700, rules).pass);
  rules.settle_s = 0;
  ramped.resize(150);  // 15 s, two thirds of it at 200 W
  EXPECT_FALSE(judge_sustained(ramped, 700, rules).pass);
  rules.settle_s = 10;

  // Between GEMM batches a capped H200 rises to its boost clock (measured: p5 1470,
  // median 1500, p95 1980 MHz): that passes.
  auto boosting = capped_run();
  for (size_t i = 0; i < boosting.size(); ++i)
    if (boosting[i].t_s > 30 && i % 4 == 0) boosting[i].sm_mhz = 1980;
  const SustainedVerdict up = judge_sustained(boosting, 700, rules);
  EXPECT_TRUE(up.pass) << (up.failures.empty() ? "" : up.failures[0]);
  EXPECT_EQ(*up.sm_p95_mhz, 1980);

  // A clock that falls to 1000 MHz in an eighth of the window fails.
  auto falling = capped_run();
  for (size_t i = 0; i < falling.size(); ++i)
    if (falling[i].t_s > 30 && i % 4 == 0) falling[i].sm_mhz = 1000;
  const SustainedVerdict v = judge_sustained(falling, 700, rules);
  EXPECT_FALSE(v.pass);
  EXPECT_TRUE(mentions(v.failures, "SM clock p5 1000 MHz is 33 % below its median"))
      << (v.failures.empty() ? "" : v.failures[0]);
}

TEST(SustainedJudge, NoSamplesIsAFailure) {
  const SustainedVerdict v = judge_sustained({}, 700);
  EXPECT_FALSE(v.pass);
  EXPECT_TRUE(mentions(v.failures, "no power samples"));
  EXPECT_TRUE(mentions(v.failures, "no SM clock samples"));
  // Samples only during the ramp: nothing settled either.
  EXPECT_FALSE(judge_sustained(capped_run(10), 700).pass);
}

}  // namespace
}  // namespace gpuvs::check
