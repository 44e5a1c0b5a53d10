// Run files that parse as JSON but cannot be true: bytes after a NUL, GPU indices
// that would put one GPU's results under another's name, and figures no GPU can
// give (a negative bandwidth, a 1e-300 FLOP/s GEMM, a subnormal time). Each is
// refused where it is read, with one line naming the file and the field, so that no
// report or plan is built on it.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "core/run_file.h"
#include "malformed_run.h"

namespace gpuvs {
namespace {

using namespace malformed_run;

// valid_full.json with a second GPU (index 1), each result on both.
std::string two_gpus(const std::function<void(ojson&)>& edit) {
  return edited([&](ojson& d) {
    ojson second = d["system"]["gpus"][0];
    second["index"] = 1;
    second["uuid"] = "GPU-00000000-0000-4000-8000-000000000002";
    d["system"]["gpus"].push_back(second);
    edit(d);
  });
}

TEST(RunFileHostile, BytesAfterANulAreRefused) {
  const std::string valid = read_bytes(kRuns / "valid_full.json");
  // What follows the NUL would be ignored by a reader that stops there.
  expect_refused(valid + std::string("\0{\"schema\": \"x\"}", 16),
                 {"not valid JSON at byte " + std::to_string(valid.size()), "a NUL byte"});
  expect_refused(valid + std::string(1, '\0'), {"a NUL byte"});
  expect_refused(std::string("\0", 1) + valid, {"not valid JSON at byte 0: a NUL byte"});
  // Inside a string: JSON spells it \u0000; a raw one is not JSON.
  expect_refused(replaced("gpu-node-07", std::string("gpu\0node", 8)), {"a NUL byte"});
}

TEST(RunFileHostile, TwoGpusInOrderAreValid) {
  EXPECT_NO_THROW(parse_run_file(two_gpus([](ojson&) {}), "run.json"));
}

TEST(RunFileHostile, GpuIndexMustBeItsPosition) {
  expect_refused(two_gpus([](ojson& d) { d["system"]["gpus"][1]["index"] = 0; }),
                 {"system.gpus[1].index: must equal its position in system.gpus (1), got 0"});
  expect_refused(two_gpus([](ojson& d) {
                   d["system"]["gpus"][0]["index"] = 1;
                   d["system"]["gpus"][1]["index"] = 0;
                 }),
                 {"system.gpus[0].index: must equal its position in system.gpus (0), got 1"});
  expect_refused(edited([](ojson& d) { d["system"]["gpus"][0]["index"] = -1; }),
                 {"system.gpus[0].index: must equal its position", "got -1"});
  expect_refused(edited([](ojson& d) { d["system"]["gpus"][0]["index"] = 7; }),
                 {"system.gpus[0].index", "got 7"});
}

TEST(RunFileHostile, ImpossibleFiguresOfAnOkResultAreRefused) {
  struct Case {
    const char* what;
    std::function<void(ojson&)> edit;
    std::vector<std::string> parts;
  };
  const auto result = [](ojson& d) -> ojson& { return d["results"][0]; };
  const Case cases[] = {
      {"negative bandwidth",
       [&](ojson& d) { result(d)["value"] = -4.28e12; },
       {"results[0].value: -4.28e+12 is not a possible bandwidth (B/s)", "10 PB/s"}},
      {"subnormal bandwidth",
       [&](ojson& d) { result(d)["value"] = 1e-310; },
       {"results[0].value: 1e-310 is not a possible bandwidth"}},
      {"bandwidth beyond any GPU",
       [&](ojson& d) { result(d)["value"] = 1e30; },
       {"results[0].value: 1e+30 is not a possible bandwidth"}},
      {"negative median",
       [&](ojson& d) {
         result(d)["stats"]["median"] = -1.0;
         result(d)["stats"]["min"] = -2.0;
       },
       {"results[0].stats.median: -1 is not a possible bandwidth"}},
      {"negative sample",
       [&](ojson& d) { result(d)["samples"][3] = -5.0; },
       {"results[0].samples[3]: -5 is not a possible bandwidth"}},
      {"negative peak",
       [&](ojson& d) { result(d)["peak"]["value"] = -4.8e12; },
       {"results[0].peak.value: -4.8e+12 is not a possible bandwidth"}},
      {"negative stddev",
       [&](ojson& d) { result(d)["stats"]["stddev"] = -1.0; },
       {"results[0].stats.stddev: must be >= 0"}},
      {"negative power limit",
       [&](ojson& d) { d["system"]["gpus"][0]["power_limit_w"] = -700.0; },
       {"system.gpus[0].power_limit_w: -700 is not a possible power (W)"}},
      {"negative clock",
       [&](ojson& d) { d["system"]["gpus"][0]["sm_clock_mhz"] = -1980; },
       {"system.gpus[0].sm_clock_mhz: must be >= 0"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    const std::string msg = expect_refused(edited(c.edit), {});
    for (const std::string& part : c.parts)
      EXPECT_NE(msg.find(part), std::string::npos) << msg;
  }
}

// A GEMM result with `value` FLOP/s (and stats to match).
std::string gemm_at(double value) {
  return edited([&](ojson& d) {
    ojson& r = d["results"][0];
    r["id"] = "compute.gemm.bf16";
    r["unit"] = "FLOP/s";
    r["value"] = value;
    r["stats"] = {{"median", value}, {"min", value}, {"max", value}, {"mean", value},
                  {"stddev", 0.0},   {"noise", 0.0}, {"samples", 1}, {"p99", value}};
    r["samples"] = {value};
    r["peak"] = nullptr;
    r["efficiency"] = nullptr;
  });
}

TEST(RunFileHostile, ComputeRatesAndTimesHaveBounds) {
  EXPECT_NO_THROW(parse_run_file(gemm_at(7.5e14), "run.json"));
  expect_refused(gemm_at(1e-300), {"results[0].value: 1e-300 is not a possible compute rate"});
  expect_refused(gemm_at(0), {"results[0].value: 0 is not a possible compute rate"});
  expect_refused(gemm_at(1e25), {"is not a possible compute rate (FLOP/s)", "1 EFLOP/s"});
  const std::string time = edited([](ojson& d) {
    ojson& r = d["results"][0];
    r["id"] = "launch.empty.latency";
    r["unit"] = "s";
    r["value"] = -2e-6;
    r["stats"]["samples"] = 0;
    r["samples"] = ojson::array();
    r["peak"] = nullptr;
  });
  expect_refused(time, {"results[0].value: -2e-06 is not a possible time (s)"});
}

TEST(RunFileHostile, NonOkResultsAndZeroBusBandwidthStayValid) {
  // An invalid result carries no trustworthy value: it is not shown, so not checked.
  EXPECT_NO_THROW(parse_run_file(edited([](ojson& d) {
                                   d["results"][0]["status"] = "invalid";
                                   d["results"][0]["status_reason"] = "checksum";
                                   d["results"][0]["value"] = -1.0;
                                 }),
                                 "run.json"));
  // nccl-tests prints a small message's bus bandwidth as 0.00 GB/s.
  EXPECT_NO_THROW(parse_run_file(edited([](ojson& d) {
                                   ojson& r = d["results"][0];
                                   r["value"] = 0.0;
                                   r["stats"] = {{"median", 0.0}, {"min", 0.0},    {"max", 0.0},
                                                 {"mean", 0.0},   {"stddev", 0.0}, {"noise", 0.0},
                                                 {"samples", 1},  {"p99", 0.0}};
                                   r["samples"] = {0.0};
                                 }),
                                 "run.json"));
}

}  // namespace
}  // namespace gpuvs
