// The outputs of `gpuvs check` (check/output.h): the gpuvs.check/1 document, the
// Prometheus text, the terminal lines, and the table of levels.
#include <gtest/gtest.h>

#include <string>

#include "check/levels.h"
#include "check/output.h"
#include "check_test_util.h"

namespace {

using gpuvs::check::CheckReport;
using gpuvs::check::GpuCheck;
using gpuvs::check::judge_level1;

CheckReport report_of(std::vector<gpuvs::check::GpuReadings> gpus) {
  CheckReport report;
  report.tool_version = "gpuvs 0.1.0 (git test)";
  report.host = "node\"7";
  report.started_at = "2026-12-01T21:00:00Z";
  report.seconds = 1.25;
  report.system.driver_version = "580.95.05";
  report.system.cuda_driver_version = "13.0";
  report.xid_window_s = 1;
  std::vector<gpuvs::check::GpuVerdict> verdicts;
  for (auto& r : gpus) {
    GpuCheck c{r, judge_level1(r)};
    report.status = gpuvs::check::worse(report.status, c.verdict.status);
    verdicts.push_back(c.verdict);
    report.gpus.push_back(c);
  }
  report.exit_code = gpuvs::check::exit_code_for(verdicts);
  return report;
}

TEST(CheckOutput, JsonDocument) {
  auto bad = gpuvs_test::healthy_h200(1);
  bad.xids = {79};
  const auto doc = gpuvs::check::to_json(report_of({gpuvs_test::healthy_h200(0), bad}));
  EXPECT_EQ(doc["schema"], "gpuvs.check/1");
  EXPECT_EQ(doc["level"], 1);
  EXPECT_EQ(doc["status"], "fail");
  EXPECT_EQ(doc["exit_code"], 1);
  EXPECT_EQ(doc["driver_version"], "580.95.05");
  ASSERT_EQ(doc["gpus"].size(), 2u);
  EXPECT_EQ(doc["gpus"][0]["status"], "pass");
  EXPECT_EQ(doc["gpus"][1]["status"], "fail");
  EXPECT_EQ(doc["gpus"][1]["uuid"], bad.uuid);
  EXPECT_EQ(doc["gpus"][1]["readings"]["xids"][0], 79);
  bool saw_xid = false;
  for (const auto& t : doc["gpus"][1]["tests"]) {
    for (const char* key : {"test", "status", "reason", "threshold", "source"})
      EXPECT_TRUE(t.contains(key)) << key;
    if (t["test"] == "xid") {
      saw_xid = true;
      EXPECT_EQ(t["status"], "fail");
    }
  }
  EXPECT_TRUE(saw_xid);
  // A reading NVML did not give is null, not a made-up zero.
  EXPECT_TRUE(doc["gpus"][0]["readings"]["retired_pages_sbe"].is_null());
}

TEST(CheckOutput, PrometheusText) {
  auto r = gpuvs_test::healthy_h200(0);
  r.last.pcie_replay = 4;
  r.first.pcie_replay = 1;
  const std::string text = gpuvs::check::prometheus_text(report_of({r}));
  const std::string labels =
      "host=\"node\\\"7\",gpu=\"0\",uuid=\"" + r.uuid + "\",pci_bus_id=\"00000000:19:00.0\"";
  EXPECT_NE(text.find("# TYPE gpuvs_check_status gauge\n"), std::string::npos);
  EXPECT_NE(text.find("gpuvs_check_status{" + labels + "} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("gpuvs_check_test{" + labels + ",test=\"pcie.replay\"} 1\n"),
            std::string::npos);
  EXPECT_NE(text.find("gpuvs_check_test{" + labels + ",test=\"ecc.uncorrected\"} 0\n"),
            std::string::npos);
  EXPECT_NE(text.find("gpuvs_check_pcie_replays{" + labels + "} 4\n"), std::string::npos);
  EXPECT_NE(text.find("gpuvs_check_ecc_errors{" + labels +
                      ",type=\"uncorrected\",counter=\"volatile\"} 0\n"),
            std::string::npos);
  EXPECT_NE(
      text.find("gpuvs_check_nvlink_errors{" + labels + ",link=\"17\",counter=\"crc_flit\"} 0\n"),
      std::string::npos);
  EXPECT_NE(text.find("gpuvs_check_xid_events{" + labels + "} 0\n"), std::string::npos);
  // Skipped tests have no verdict line.
  EXPECT_EQ(text.find("test=\"retired_pages\""), std::string::npos);
}

TEST(CheckOutput, TerminalText) {
  auto r = gpuvs_test::healthy_h200(0);
  r.name = "NVIDIA H200\x1b[31m";
  r.nvlinks[3].active = false;
  const std::string text = gpuvs::check::render_text(report_of({r}));
  EXPECT_EQ(text.find('\x1b'), std::string::npos);  // hostile text from NVML is escaped
  EXPECT_NE(text.find(": FAIL\n"), std::string::npos) << text;
  EXPECT_NE(text.find("fail  nvlink.state"), std::string::npos) << text;
  EXPECT_NE(text.find("1 GPU(s): 0 pass, 0 warn, 1 fail"), std::string::npos) << text;
}

TEST(CheckLevels, OnlyLevelOneIsRegistered) {
  ASSERT_EQ(gpuvs::check::levels().size(), 1u);
  EXPECT_NE(gpuvs::check::find_level(1), nullptr);
  EXPECT_EQ(gpuvs::check::find_level(2), nullptr);
  EXPECT_EQ(gpuvs::check::find_level(3), nullptr);
}

}  // namespace
