// Level 1's rules (check/health.h) on readings: a healthy H200 passes every test, and
// each fault of docs/check.md gives its documented status.
#include <gtest/gtest.h>

#include <string>

#include "check/health.h"
#include "check_test_util.h"

namespace {

using gpuvs::ExitCode;
using gpuvs::check::GpuReadings;
using gpuvs::check::GpuVerdict;
using gpuvs::check::judge_level1;
using gpuvs::check::Status;
using gpuvs::check::TestVerdict;
using gpuvs_test::healthy_h200;

const TestVerdict& find(const GpuVerdict& v, const std::string& test) {
  for (const TestVerdict& t : v.tests)
    if (t.test == test) return t;
  throw std::runtime_error("no test " + test);
}

Status status_of(const GpuReadings& r, const std::string& test) {
  return find(judge_level1(r), test).status;
}

TEST(CheckHealth, HealthyH200PassesEveryTest) {
  const GpuVerdict v = judge_level1(healthy_h200());
  EXPECT_EQ(v.status, Status::kPass);
  ASSERT_EQ(v.tests.size(), 15u);
  for (const TestVerdict& t : v.tests) {
    // Retired pages are not reported from Ampere on (row remapping replaces them).
    const Status want = t.test == "retired_pages" ? Status::kSkip : Status::kPass;
    EXPECT_EQ(t.status, want) << t.test << ": " << t.reason;
    EXPECT_FALSE(t.reason.empty()) << t.test;
    EXPECT_FALSE(t.threshold.empty()) << t.test;
    EXPECT_FALSE(t.source.empty()) << t.test;
  }
  EXPECT_EQ(gpuvs::check::exit_code_for({v}), ExitCode::kOk);
}

TEST(CheckHealth, UncorrectedEcc) {
  GpuReadings r = healthy_h200();
  r.last.ecc_uncorrected_volatile = 2;
  r.last.ecc_uncorrected_aggregate = 2;
  EXPECT_EQ(status_of(r, "ecc.uncorrected"), Status::kFail);
  EXPECT_NE(find(judge_level1(r), "ecc.uncorrected").reason.find("2 uncorrected"),
            std::string::npos);
  // Only in the GPU's history: a warning.
  r.last.ecc_uncorrected_volatile = 0;
  EXPECT_EQ(status_of(r, "ecc.uncorrected"), Status::kWarn);
  r = healthy_h200();
  r.ecc_enabled = false;
  EXPECT_EQ(status_of(r, "ecc.uncorrected"), Status::kWarn);
}

TEST(CheckHealth, CorrectedEccIsANoteUnlessItRises) {
  GpuReadings r = healthy_h200();
  r.first.ecc_corrected_volatile = 3;
  r.last.ecc_corrected_volatile = 3;
  r.last.ecc_corrected_aggregate = 40;
  EXPECT_EQ(status_of(r, "ecc.corrected"), Status::kPass);
  EXPECT_NE(find(judge_level1(r), "ecc.corrected").reason.find("40"), std::string::npos);
  r.last.ecc_corrected_volatile = 5;
  EXPECT_EQ(status_of(r, "ecc.corrected"), Status::kWarn);
}

TEST(CheckHealth, RowRemapping) {
  GpuReadings r = healthy_h200();
  r.remap->pending = true;
  r.remap->uncorrected = 1;
  EXPECT_EQ(status_of(r, "row_remap"), Status::kWarn);
  r.remap->failure = true;
  EXPECT_EQ(status_of(r, "row_remap"), Status::kFail);
  r = healthy_h200();
  r.remap_histogram->none = 1;
  EXPECT_EQ(status_of(r, "row_remap.histogram"), Status::kWarn);
  r.remap.reset();
  EXPECT_EQ(status_of(r, "row_remap"), Status::kSkip);
}

TEST(CheckHealth, RetiredPages) {
  GpuReadings r = healthy_h200();
  r.retired_pages_sbe = 2;
  r.retired_pages_dbe = 1;
  r.retired_pages_pending = false;
  EXPECT_EQ(status_of(r, "retired_pages"), Status::kPass);
  r.retired_pages_pending = true;
  EXPECT_EQ(status_of(r, "retired_pages"), Status::kWarn);
}

TEST(CheckHealth, Xids) {
  GpuReadings r = healthy_h200();
  r.xids = {79};
  EXPECT_EQ(status_of(r, "xid"), Status::kFail);
  r.xids = {13, 31};
  EXPECT_EQ(status_of(r, "xid"), Status::kWarn);
  r.xids = {13, 48};
  EXPECT_EQ(status_of(r, "xid"), Status::kFail);
  r.xid_watched = false;
  r.xid_unwatched_reason = "Not Supported";
  EXPECT_EQ(status_of(r, "xid"), Status::kSkip);
}

TEST(CheckHealth, PcieWidthAndGeneration) {
  GpuReadings r = healthy_h200();
  r.pcie_width = 8;
  EXPECT_EQ(status_of(r, "pcie.link"), Status::kWarn);  // idle
  r.clock_event_reasons = 0;
  EXPECT_EQ(status_of(r, "pcie.link"), Status::kFail);  // busy and narrow
  r = healthy_h200();
  r.pcie_gen = 1;  // power saving at idle
  EXPECT_EQ(status_of(r, "pcie.link"), Status::kPass);
  r.clock_event_reasons = gpuvs::nvml::kClocksEventSwPowerCap;
  EXPECT_EQ(status_of(r, "pcie.link"), Status::kWarn);
}

TEST(CheckHealth, ReplayCountersRising) {
  GpuReadings r = healthy_h200();
  r.first.pcie_replay = 7;
  r.last.pcie_replay = 7;
  EXPECT_EQ(status_of(r, "pcie.replay"), Status::kPass);
  r.last.pcie_replay = 9;
  EXPECT_EQ(status_of(r, "pcie.replay"), Status::kWarn);
  r = healthy_h200();
  r.last.nvlinks[4].replay = 3;
  const TestVerdict t = find(judge_level1(r), "nvlink.errors");
  EXPECT_EQ(t.status, Status::kWarn);
  EXPECT_NE(t.reason.find("link 4 replay 0 -> 3"), std::string::npos) << t.reason;
}

TEST(CheckHealth, NvLinkDown) {
  GpuReadings r = healthy_h200();
  r.nvlinks[17].active = false;
  const TestVerdict t = find(judge_level1(r), "nvlink.state");
  EXPECT_EQ(t.status, Status::kFail);
  EXPECT_NE(t.reason.find("down: 17"), std::string::npos) << t.reason;
  for (auto& l : r.nvlinks)
    l.active = false;
  EXPECT_EQ(status_of(r, "nvlink.state"), Status::kWarn);
  r.nvlinks.clear();
  r.last.nvlinks.clear();
  EXPECT_EQ(status_of(r, "nvlink.state"), Status::kSkip);
  EXPECT_EQ(status_of(r, "nvlink.errors"), Status::kSkip);
}

TEST(CheckHealth, ClocksPersistencePowerTemperature) {
  GpuReadings r = healthy_h200();
  r.clock_event_reasons = gpuvs::nvml::kClocksEventSwPowerCap;
  EXPECT_EQ(status_of(r, "clocks.events"), Status::kPass);  // capping is not a fault
  r.clock_event_reasons = gpuvs::nvml::kClocksEventSwThermalSlowdown;
  EXPECT_EQ(status_of(r, "clocks.events"), Status::kWarn);
  r.clock_event_reasons = gpuvs::nvml::kClocksEventHwSlowdown;
  EXPECT_EQ(status_of(r, "clocks.events"), Status::kFail);
  r = healthy_h200();
  r.persistence_mode = false;
  EXPECT_EQ(status_of(r, "persistence_mode"), Status::kWarn);
  r = healthy_h200();
  r.power_limit_w = 500;
  EXPECT_EQ(status_of(r, "power.limit"), Status::kWarn);
  r = healthy_h200();
  r.temperature_c = 85;
  EXPECT_EQ(status_of(r, "temperature"), Status::kWarn);
  r.temperature_c = 90;
  EXPECT_EQ(status_of(r, "temperature"), Status::kFail);
  r = healthy_h200();
  r.mig_enabled = true;
  EXPECT_EQ(status_of(r, "mig"), Status::kPass);
}

TEST(CheckHealth, VerdictAndExitCodeAreTheWorst) {
  GpuReadings warn = healthy_h200(1);
  warn.persistence_mode = false;
  GpuReadings fail = healthy_h200(2);
  fail.remap->failure = true;
  const GpuVerdict ok = judge_level1(healthy_h200());
  const GpuVerdict w = judge_level1(warn);
  const GpuVerdict f = judge_level1(fail);
  EXPECT_EQ(w.status, Status::kWarn);
  EXPECT_EQ(f.status, Status::kFail);
  EXPECT_EQ(gpuvs::check::exit_code_for({ok, w}), ExitCode::kDegraded);
  EXPECT_EQ(gpuvs::check::exit_code_for({ok, w, f}), ExitCode::kFailure);
  EXPECT_EQ(gpuvs::check::exit_code_for({ok, ok}), ExitCode::kOk);
}

TEST(CheckHealth, VersionsAgainstTheTuneCache) {
  using gpuvs::check::CachedVersions;
  using gpuvs::check::judge_versions;
  EXPECT_EQ(judge_versions("580.95.05", "13.0", CachedVersions{}).status, Status::kPass);
  EXPECT_EQ(judge_versions("580.95.05", "13.0", CachedVersions{"580.95.05", "13.0"}).status,
            Status::kPass);
  const TestVerdict t = judge_versions("580.95.05", "13.0", CachedVersions{"570.86.15", "13.0"});
  EXPECT_EQ(t.status, Status::kWarn);
  EXPECT_NE(t.reason.find("570.86.15"), std::string::npos) << t.reason;
  EXPECT_EQ(judge_versions(std::nullopt, "13.0", CachedVersions{"570.86.15", {}}).status,
            Status::kWarn);
}

}  // namespace
