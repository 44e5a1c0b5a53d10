// Exit codes from results: power capping is recorded and shown but is not a fault;
// thermal and hardware slowdowns, invalid results and errors are.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "core/verdict.h"

namespace gpuvs {
namespace {

RunFile run_with_reasons(std::vector<std::string> reasons) {
  RunFile run;
  Result r;
  r.id = "memory.hbm.copy";
  r.unit = "B/s";
  r.value = 4e12;
  r.clocks = ClockRecord{};
  r.clocks->throttle_reasons = std::move(reasons);
  run.results.push_back(r);
  return run;
}

TEST(Verdict, KindOfEveryReasonGpuvsNames) {
  EXPECT_EQ(clock_event_kind("sw_power_cap"), ClockEventKind::kPowerCap);
  for (const char* r :
       {"hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown"})
    EXPECT_EQ(clock_event_kind(r), ClockEventKind::kSlowdown) << r;
  for (const char* r : {"gpu_idle", "applications_clocks_setting", "sync_boost",
                        "display_clock_setting", "unknown_0x200", ""})
    EXPECT_EQ(clock_event_kind(r), ClockEventKind::kOther) << r;
}

TEST(Verdict, PowerCappingAloneExitsZero) {
  const RunFile run = run_with_reasons({"sw_power_cap"});
  EXPECT_EQ(exit_code_for(run), ExitCode::kOk);
  EXPECT_FALSE(throttled(run.results[0]));
  EXPECT_TRUE(power_capped(run.results[0]));
  EXPECT_EQ(clock_event_text(run.results[0]), "power-capped (normal under full load)");
  // With the idle reason beside it (a step's start), still only power capping.
  EXPECT_EQ(exit_code_for(run_with_reasons({"gpu_idle", "sw_power_cap"})), ExitCode::kOk);
}

TEST(Verdict, EverySlowdownExitsFour) {
  for (const char* r :
       {"hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown"}) {
    const RunFile run = run_with_reasons({r});
    EXPECT_EQ(exit_code_for(run), ExitCode::kDegraded) << r;
    EXPECT_TRUE(throttled(run.results[0])) << r;
    EXPECT_FALSE(power_capped(run.results[0])) << r;
    EXPECT_EQ(clock_event_text(run.results[0]),
              std::string("throttled: thermal/hardware (") + r + ")");
  }
}

TEST(Verdict, PowerCapWithASlowdownExitsFourAndNamesOnlyTheSlowdown) {
  const RunFile run = run_with_reasons({"sw_power_cap", "hw_thermal_slowdown"});
  EXPECT_EQ(exit_code_for(run), ExitCode::kDegraded);
  EXPECT_FALSE(power_capped(run.results[0]));
  EXPECT_EQ(clock_event_text(run.results[0]), "throttled: thermal/hardware (hw_thermal_slowdown)");
  // One slowed result among power-capped ones decides the run.
  RunFile mixed = run_with_reasons({"sw_power_cap"});
  mixed.results.push_back(run.results[0]);
  EXPECT_EQ(exit_code_for(mixed), ExitCode::kDegraded);
}

TEST(Verdict, SettingsAndIdleAreNoEvent) {
  const RunFile run = run_with_reasons({"gpu_idle", "applications_clocks_setting", "sync_boost"});
  EXPECT_EQ(exit_code_for(run), ExitCode::kOk);
  EXPECT_EQ(clock_event_text(run.results[0]), "");
}

TEST(Verdict, InvalidAndErrorsStay) {
  RunFile invalid = run_with_reasons({});
  invalid.results[0].status = Status::kInvalid;
  EXPECT_EQ(exit_code_for(invalid), ExitCode::kDegraded);
  RunFile failed = run_with_reasons({"sw_power_cap"});
  failed.errors.push_back({"bench memory.hbm on GPU 0", "out of memory"});
  EXPECT_EQ(exit_code_for(failed), ExitCode::kFailure);
  // A throttled result that is not ok (unsupported) has no figure to doubt.
  RunFile unsupported = run_with_reasons({"hw_slowdown"});
  unsupported.results[0].status = Status::kUnsupported;
  EXPECT_EQ(exit_code_for(unsupported), ExitCode::kOk);
}

// The bundled H200 runs of `gpuvs run` met the 700 W limit under tensor load and saw
// no other event: they exit 0 (they exited 4 while power capping counted as a fault).
TEST(Verdict, ReferenceH200RunsArePowerCappedOnlyAndExitZero) {
  for (const char* file : {"h200-sxm-run.json", "h200x2-run.json"}) {
    const RunFile run = load_run_file(std::string(GPUVS_SOURCE_DIR) + "/data/reference/" + file);
    std::set<std::string> reasons;
    int capped = 0;
    for (const Result& r : run.results) {
      if (r.clocks)
        reasons.insert(r.clocks->throttle_reasons.begin(), r.clocks->throttle_reasons.end());
      capped += power_capped(r) ? 1 : 0;
    }
    EXPECT_EQ(reasons, std::set<std::string>{"sw_power_cap"}) << file;
    EXPECT_GT(capped, 0) << file;
    EXPECT_TRUE(run.errors.empty()) << file;
    EXPECT_EQ(exit_code_for(run), ExitCode::kOk) << file;
  }
}

}  // namespace
}  // namespace gpuvs
