// The run file's monitor records (docs/results.md: results[].utilization, timeline):
// round trips, placement in the text, files written before they existed, and
// malformed ones refused: each of those tests breaks one field of
// tests/data/runs/valid_full.json (which holds both) and checks the message names it.
// (test_run_file.cpp's full_run() carries both too, for its every-field round trip.)
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/run_file.h"

namespace gpuvs {
namespace {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

std::string fixture() {
  std::ifstream in(fs::path(GPUVS_TEST_DATA_DIR) / "runs" / "valid_full.json", std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// valid_full.json with its first result's utilization changed by `edit`.
std::string with_utilization(const std::function<void(ojson&)>& edit) {
  ojson doc = ojson::parse(fixture());
  edit(doc["results"][0]["utilization"]);
  return doc.dump(2);
}

// valid_full.json with its timeline changed by `edit`.
std::string with_timeline(const std::function<void(ojson&)>& edit) {
  ojson doc = ojson::parse(fixture());
  edit(doc["timeline"]);
  return doc.dump(2);
}

// Asserts `text` is refused as a usage error with exactly `message`.
void expect_message(const std::string& text, const std::string& message) {
  try {
    parse_run_file(text, "run.json");
    ADD_FAILURE() << "accepted; expected: " << message;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kUsage);
    EXPECT_EQ(std::string(e.what()), message);
  }
}

RunFile round_trip(const RunFile& run) {
  return parse_run_file(to_json_text(run), "mem.json");
}

TEST(RunFileMonitor, RoundTripKeepsAbsentFiguresAbsent) {
  const RunFile run = parse_run_file(fixture(), "valid_full.json");
  EXPECT_EQ(to_json_text(run), fixture());
  const RunFile back = round_trip(run);
  EXPECT_EQ(back, run);
  const Utilization& u = *back.results[0].utilization;
  EXPECT_EQ(u.step, "memory.hbm");
  EXPECT_EQ(u.gpus[0].sm_util_pct, (UtilDistribution{99.45, 99.8}));
  EXPECT_TRUE(u.gpus[0].throttle_s_by_reason.empty());
  EXPECT_EQ(back.timeline->gpus[0].sm_util_pct[0], std::nullopt);  // null, not 0

  // A GPU without GPM, and without power: absent figures stay absent.
  RunFile sparse = run;
  GpuUtilization& g = sparse.results[0].utilization->gpus[0];
  g.sm_util_pct.reset();
  g.tensor_util_pct.reset();
  g.power_w_mean.reset();
  g.energy_j.reset();
  g.throttle_s_by_reason = {{"gpu_idle", 0.25}, {"sw_power_cap", 0.0}};
  sparse.timeline->gpus[0].sm_mhz.assign(6, std::nullopt);
  const RunFile sparse_back = round_trip(sparse);
  EXPECT_EQ(sparse_back, sparse);
  EXPECT_FALSE(sparse_back.results[0].utilization->gpus[0].sm_util_pct.has_value());
  EXPECT_EQ(to_json_text(sparse_back), to_json_text(sparse));

  // Nothing sampled (no NVML): source "none", the reason in notes, no GPU.
  RunFile none = run;
  none.results[0].utilization.reset();
  none.timeline = Timeline{"none", 0.25, {"NVML unavailable: libnvidia-ml.so.1 not found"}, {}};
  EXPECT_EQ(round_trip(none), none);
  // A window of zero length and a GPU with no figure at all.
  RunFile empty = run;
  empty.results[1].utilization = Utilization{"launch", 3.5, 3.5, {GpuUtilization{}}};
  EXPECT_EQ(round_trip(empty), empty);
}

TEST(RunFileMonitor, PlacementInTheText) {
  const std::string text = fixture();
  const auto pos = [&](const std::string& key, std::size_t from = 0) {
    return text.find("\"" + key + "\":", from);
  };
  // utilization is the last key of a result, timeline the last key of the file.
  EXPECT_LT(pos("clocks"), pos("utilization"));
  EXPECT_LT(pos("comm"), pos("timeline"));
  EXPECT_NE(text.find("\n      \"utilization\": {\n        \"step\": \"memory.hbm\","),
            std::string::npos);
  EXPECT_NE(text.find("\"utilization\": null\n    }\n  ],"), std::string::npos);
  EXPECT_NE(
      text.find("\n  \"timeline\": {\n    \"source\": \"nvml+gpm\",\n    \"interval_s\": 0.1,"),
      std::string::npos);
  EXPECT_NE(text.find("\"sm_util_pct\": [\n          null,\n          99.2,"), std::string::npos);
}

TEST(RunFileMonitor, FilesWithoutUtilizationOrTimelineStillLoad) {
  // Written before the monitor recorded runs: still valid gpuvs.run/1 files.
  const fs::path path =
      fs::path(GPUVS_SOURCE_DIR) / "tests" / "data" / "runs" / "h200-run-2026-11-30.json";
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  ASSERT_EQ(text.find("\"utilization\""), std::string::npos) << "the fixture was rewritten";
  ASSERT_EQ(text.find("\"timeline\""), std::string::npos);
  const RunFile run = parse_run_file(text, path.string());
  ASSERT_FALSE(run.results.empty());
  for (const Result& r : run.results)
    EXPECT_FALSE(r.utilization.has_value()) << r.id;
  EXPECT_FALSE(run.timeline.has_value());
  const RunFile minimal =
      load_run_file(fs::path(GPUVS_TEST_DATA_DIR) / "runs" / "valid_minimal.json");
  EXPECT_FALSE(minimal.timeline.has_value());
  // Read back from its own text, the old run gains only nulls.
  const std::string rewritten = to_json_text(run);
  EXPECT_NE(rewritten.find("\"utilization\": null"), std::string::npos);
  EXPECT_NE(rewritten.find("\"timeline\": null"), std::string::npos);
  EXPECT_EQ(round_trip(run), run);
}

TEST(RunFileMonitor, FixtureHasBothAndEditsKeepItValid) {
  const RunFile run = parse_run_file(with_utilization([](ojson&) {}), "run.json");
  ASSERT_TRUE(run.results[0].utilization.has_value());
  ASSERT_TRUE(run.timeline.has_value());
  // Both are optional: null or missing reads as absent.
  ojson doc = ojson::parse(fixture());
  doc["results"][0].erase("utilization");
  doc["timeline"] = nullptr;
  const RunFile bare = parse_run_file(doc.dump(2), "run.json");
  EXPECT_FALSE(bare.results[0].utilization.has_value());
  EXPECT_FALSE(bare.timeline.has_value());
  // Unknown keys inside them are ignored, as everywhere (later 1.x writers).
  EXPECT_NO_THROW(
      parse_run_file(with_timeline([](ojson& t) { t["gpus"][0]["temp_c"] = {1}; }), "run.json"));
}

TEST(RunFileMonitor, UtilizationWrongShapes) {
  expect_message(with_utilization([](ojson& u) { u = "busy"; }),
                 "run.json: results[0].utilization: expected an object, got string");
  expect_message(with_utilization([](ojson& u) { u.erase("step"); }),
                 "run.json: results[0].utilization.step: required field is missing");
  expect_message(with_utilization([](ojson& u) { u["gpus"] = ojson::object(); }),
                 "run.json: results[0].utilization.gpus: expected an array, got object");
  expect_message(
      with_utilization([](ojson& u) { u["gpus"][0]["sm_util_pct"] = 99.5; }),
      "run.json: results[0].utilization.gpus[0].sm_util_pct: expected an object, got number");
  expect_message(
      with_utilization([](ojson& u) { u["gpus"][0]["sm_util_pct"].erase("p95"); }),
      "run.json: results[0].utilization.gpus[0].sm_util_pct.p95: required field is missing");
  expect_message(with_utilization([](ojson& u) { u["gpus"][0]["samples"] = 1.5; }),
                 "run.json: results[0].utilization.gpus[0].samples: expected an integer, got "
                 "number");
  expect_message(
      with_utilization([](ojson& u) { u["gpus"][0]["throttle_s_by_reason"]["hw_slowdown"] = "1"; }),
      "run.json: results[0].utilization.gpus[0].throttle_s_by_reason.hw_slowdown: expected a "
      "number, got string");
}

TEST(RunFileMonitor, UtilizationRules) {
  expect_message(with_utilization([](ojson& u) { u["t_end_s"] = 0.01; }),
                 "run.json: results[0].utilization.t_end_s: must be >= 0.052, got 0.01");
  expect_message(with_utilization([](ojson& u) { u["t_begin_s"] = -1.0; }),
                 "run.json: results[0].utilization.t_begin_s: must be >= 0, got -1");
  expect_message(with_utilization([](ojson& u) { u["gpus"][0]["gpu"] = 1; }),
                 "run.json: results[0].utilization.gpus[0].gpu: GPU index 1 is out of range "
                 "(system.gpus has 1 entries)");
  expect_message(with_utilization([](ojson& u) { u["gpus"].push_back(u["gpus"][0]); }),
                 "run.json: results[0].utilization.gpus[1].gpu: GPU 0 appears twice");
  expect_message(with_utilization([](ojson& u) { u["gpus"][0]["samples"] = -1; }),
                 "run.json: results[0].utilization.gpus[0].samples: must be >= 0, got -1");
  expect_message(
      with_utilization([](ojson& u) { u["gpus"][0]["dram_bw_util_pct"]["mean"] = -0.5; }),
      "run.json: results[0].utilization.gpus[0].dram_bw_util_pct.mean: must be >= 0, got -0.5");
  expect_message(with_utilization([](ojson& u) { u["gpus"][0]["power_w_max"] = -3.0; }),
                 "run.json: results[0].utilization.gpus[0].power_w_max: must be >= 0, got -3");
  expect_message(with_utilization([](ojson& u) { u["gpus"][0]["throttled_s"] = -0.1; }),
                 "run.json: results[0].utilization.gpus[0].throttled_s: must be >= 0, got -0.1");
  expect_message(
      with_utilization([](ojson& u) { u["gpus"][0]["throttle_s_by_reason"]["gpu_idle"] = -2; }),
      "run.json: results[0].utilization.gpus[0].throttle_s_by_reason.gpu_idle: must be >= 0, got "
      "-2");
}

TEST(RunFileMonitor, TimelineRules) {
  expect_message(with_timeline([](ojson& t) { t = ojson::array(); }),
                 "run.json: timeline: expected an object, got array");
  expect_message(with_timeline([](ojson& t) { t["source"] = "dcgm"; }),
                 "run.json: timeline.source: unknown source \"dcgm\" (expected nvml+gpm, nvml or "
                 "none)");
  expect_message(with_timeline([](ojson& t) { t["interval_s"] = 0; }),
                 "run.json: timeline.interval_s: must be > 0, got 0");
  expect_message(with_timeline([](ojson& t) { t["notes"] = {1}; }),
                 "run.json: timeline.notes[0]: expected a string, got integer");
  expect_message(with_timeline([](ojson& t) { t["gpus"][0]["gpu"] = -1; }),
                 "run.json: timeline.gpus[0].gpu: GPU index -1 is out of range (system.gpus has "
                 "1 entries)");
  expect_message(with_timeline([](ojson& t) { t["gpus"].push_back(t["gpus"][0]); }),
                 "run.json: timeline.gpus[1].gpu: GPU 0 appears twice");
  expect_message(with_timeline([](ojson& t) { t["gpus"][0]["t_s"][3] = 0.15; }),
                 "run.json: timeline.gpus[0].t_s[3]: must be >= 0 and >= the entry before, got "
                 "0.15");
  expect_message(with_timeline([](ojson& t) { t["gpus"][0]["t_s"][0] = -0.001; }),
                 "run.json: timeline.gpus[0].t_s[0]: must be >= 0 and >= the entry before, got "
                 "-0.001");
  expect_message(with_timeline([](ojson& t) { t["gpus"][0]["power_w"].erase(5); }),
                 "run.json: timeline.gpus[0].power_w: has 5 entries, t_s has 6");
  expect_message(with_timeline([](ojson& t) { t["gpus"][0].erase("sm_mhz"); }),
                 "run.json: timeline.gpus[0].sm_mhz: required field is missing");
  expect_message(with_timeline([](ojson& t) { t["gpus"][0]["tensor_util_pct"][2] = -1.0; }),
                 "run.json: timeline.gpus[0].tensor_util_pct[2]: must be >= 0, got -1");
  expect_message(with_timeline([](ojson& t) { t["gpus"][0]["sm_mhz"][1] = 1980.5; }),
                 "run.json: timeline.gpus[0].sm_mhz[1]: expected an integer, got number");
  expect_message(with_timeline([](ojson& t) { t["gpus"][0]["gpu_util_pct"][0] = "idle"; }),
                 "run.json: timeline.gpus[0].gpu_util_pct[0]: expected a number, got string");
}

}  // namespace
}  // namespace gpuvs
