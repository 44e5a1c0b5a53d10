// Malformed run files: each must be refused with gpuvs::UsageError (exit code 2) and
// one line "<name>: <field path>: <problem>" that names the file and the field, and
// nothing hostile (deep nesting, NUL bytes, invalid UTF-8, huge keys) may crash the
// reader or break the message onto several lines.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/run_file.h"
#include "malformed_run.h"

namespace gpuvs {
namespace {

using namespace malformed_run;

// Asserts that `text` is refused with exactly `message`.
void expect_message(std::string_view text, const std::string& message) {
  EXPECT_EQ(expect_refused(text, {}), message);
}

// A valid comm section: two ranks of one MPI job on two hosts.
ojson valid_comm() {
  return ojson::parse(R"({
    "launch": "mpi",
    "world_size": 2,
    "ranks": [
      {"rank": 0, "host": "gpu-node-07", "pid": 4242, "local_rank": 0, "device": 0,
       "gpu_name": "NVIDIA H200", "gpu_uuid": "GPU-3f8a2c1e-7b45-4d9a-9e21-0c6b5d4f8a17",
       "pci_bus_id": "00000000:19:00.0"},
      {"rank": 1, "host": "gpu-node-08", "pid": 4243, "local_rank": 0, "device": 0,
       "gpu_name": "NVIDIA H200", "gpu_uuid": "GPU-9a0b1c2d-0000-4000-8000-000000000001",
       "pci_bus_id": "00000000:19:00.0"}
    ],
    "nccl_env": {"NCCL_DEBUG": "WARN", "NCCL_IB_HCA": "mlx5"},
    "timeout_s": 300.0
  })");
}

// valid_full.json with valid_comm() as its comm section, then changed by `edit`.
std::string with_comm(const std::function<void(ojson&)>& edit) {
  return edited([&](ojson& d) {
    d["comm"] = valid_comm();
    edit(d["comm"]);
  });
}

TEST(RunFileMalformed, FixtureIsValid) {
  // Every test below breaks exactly one thing in this file.
  EXPECT_NO_THROW(parse_run_file(edited([](ojson&) {}), "run.json"));
  const RunFile run = parse_run_file(with_comm([](ojson&) {}), "run.json");
  ASSERT_TRUE(run.comm.has_value());
  EXPECT_EQ(run.comm->ranks.size(), 2u);
}

// ---------------------------------------------------------------- JSON syntax

TEST(RunFileMalformed, EmptyFile) {
  const std::string msg = expect_refused("", {});
  EXPECT_EQ(msg, "run.json: not valid JSON at byte 0: the file is empty");
  expect_refused("  \n\t", {"not valid JSON at byte 4: ", "unexpected end of input"});
}

TEST(RunFileMalformed, NotJson) {
  const std::string msg =
      expect_refused("gpuvs run output\n", {"run.json: not valid JSON at byte 0: "});
  expect_refused("{\"schema\": gpuvs}", {"run.json: not valid JSON at byte 11: "});
  EXPECT_EQ(msg.find("[json.exception"), std::string::npos) << msg;
}

TEST(RunFileMalformed, TruncatedJson) {
  const std::string text = read_bytes(kRuns / "valid_full.json");
  // Cut at the end of a line near the middle, so not inside a string.
  expect_refused(text.substr(0, text.find('\n', text.size() / 2)),
                 {"not valid JSON at byte ", "end of input"});
  expect_refused(text.substr(0, text.size() - 2), {"not valid JSON at byte "});
}

TEST(RunFileMalformed, TrailingGarbage) {
  expect_refused(read_bytes(kRuns / "valid_full.json") + "{}", {"not valid JSON at byte "});
}

TEST(RunFileMalformed, NanAndInfinityLiterals) {
  expect_refused(replaced("\"value\": 4213000000000.0", "\"value\": NaN"),
                 {"not valid JSON at byte ", "invalid literal"});
  expect_refused(replaced("\"value\": 4213000000000.0", "\"value\": Infinity"),
                 {"not valid JSON at byte "});
  expect_refused(replaced("\"value\": 4213000000000.0", "\"value\": -Infinity"),
                 {"not valid JSON at byte "});
}

TEST(RunFileMalformed, NumberBeyondDouble) {
  // Valid JSON grammar, but no finite double: the parser refuses it.
  expect_refused(replaced("\"value\": 4213000000000.0", "\"value\": 1e400"),
                 {"run.json: not valid JSON at byte ", "number overflow parsing '1e400'"});
  expect_refused(replaced("\"value\": 4213000000000.0", "\"value\": -1e400"), {"number overflow"});
}

TEST(RunFileMalformed, RawNulByte) {
  expect_refused(replaced("\"host\": \"gpu-node-07\"", std::string("\"host\": \"gpu\0node\"", 18)),
                 {"not valid JSON at byte "});
  expect_refused(std::string("{\"schema\"\0: 1}", 14), {"not valid JSON at byte "});
}

TEST(RunFileMalformed, InvalidUtf8) {
  const std::string msg =
      expect_refused(replaced("\"host\": \"gpu-node-07\"", "\"host\": \"gpu\xff\xfenode\""),
                     {"not valid JSON at byte ", "ill-formed UTF-8 byte", "\\xff"});
  EXPECT_EQ(msg.find('\xff'), std::string::npos) << "the bad byte is shown escaped";
  // A lone surrogate escape decodes to no valid UTF-8 either.
  expect_refused(replaced("\"host\": \"gpu-node-07\"", "\"host\": \"\\ud800\""),
                 {"not valid JSON at byte "});
  // Overlong encoding of '/'.
  expect_refused(replaced("\"host\": \"gpu-node-07\"", "\"host\": \"\xc0\xaf\""),
                 {"not valid JSON at byte "});
}

TEST(RunFileMalformed, DeepNestingIsRefusedWithoutRecursion) {
  expect_refused(std::string(100000, '['), {"run.json: ", "nested deeper than 64 levels"});
  std::string objects;
  for (int i = 0; i < 100000; ++i)
    objects += "{\"a\":";
  expect_refused(objects, {"nested deeper than 64 levels"});
  // Hidden inside a valid file, under a key gpuvs would otherwise ignore.
  expect_refused(
      replaced("\"errors\": [", "\"extra\": " + std::string(5000, '[') + ", \"errors\": ["),
      {"run.json: extra[0][0]", "nested deeper than 64 levels"});
}

TEST(RunFileMalformed, DuplicateKeysAreRefused) {
  // JSON leaves duplicate keys undefined and readers disagree on which one wins:
  // gpuvs refuses them rather than guess.
  expect_refused(replaced("\"schema\": \"gpuvs.run/1\",",
                          "\"schema\": \"gpuvs.run/1\", \"schema\": \"gpuvs.run/1\","),
                 {"run.json: schema: duplicate key"});
  expect_refused(replaced("\"unit\": \"B/s\",", "\"unit\": \"B/s\", \"unit\": \"s\","),
                 {"run.json: results[0].unit: duplicate key"});
}

// ---------------------------------------------------------------- foreign and versions

TEST(RunFileMalformed, TopLevelIsArray) {
  expect_refused("[{\"schema\": \"gpuvs.run/1\"}]",
                 {"run.json: not a gpuvs run file (the top level is an array, not an object)"});
  expect_refused("42", {"run.json: not a gpuvs run file (the top level is a number"});
}

TEST(RunFileMalformed, MissingSchema) {
  const std::string msg =
      expect_refused(edited([](ojson& d) { d.erase("schema"); }), {"run.json: "});
  EXPECT_EQ(msg, "run.json: not a gpuvs run file (no \"schema\" field)");
}

TEST(RunFileMalformed, ForeignSchema) {
  const std::string msg =
      expect_refused(edited([](ojson& d) { d["schema"] = "nvbench/1"; }), {"run.json: "});
  EXPECT_EQ(msg, "run.json: not a gpuvs run file (schema \"nvbench/1\")");
}

TEST(RunFileMalformed, SchemaIsNotAString) {
  expect_refused(edited([](ojson& d) { d["schema"] = 1; }),
                 {"run.json: schema: expected a string"});
}

TEST(RunFileMalformed, NewerVersion) {
  const std::string msg =
      expect_refused(edited([](ojson& d) { d["schema"] = "gpuvs.run/2"; }), {"run.json: "});
  EXPECT_EQ(msg,
            "run.json: schema gpuvs.run/2 is newer than this gpuvs reads (gpuvs.run/1); "
            "upgrade gpuvs");
  expect_refused(edited([](ojson& d) { d["schema"] = "gpuvs.run/17"; }),
                 {"gpuvs.run/17 is newer", "(gpuvs.run/1)"});
  expect_refused(edited([](ojson& d) { d["schema"] = "gpuvs.run/123456789012345678901234567890"; }),
                 {"gpuvs.run/123456789012345678901234567890 is newer"});
}

TEST(RunFileMalformed, MalformedVersion) {
  for (const char* schema : {"gpuvs.run/x", "gpuvs.run/", "gpuvs.run/1.1", "gpuvs.run/01",
                             "gpuvs.run/0", "gpuvs.run/1 ", "gpuvs.run/-1"}) {
    expect_refused(edited([&](ojson& d) { d["schema"] = schema; }),
                   {"run.json: schema: malformed schema version \"", "(expected gpuvs.run/1)"});
  }
}

// ---------------------------------------------------------------- structure and types

TEST(RunFileMalformed, MissingMeta) {
  const std::string msg = expect_refused(edited([](ojson& d) { d.erase("meta"); }), {});
  EXPECT_EQ(msg, "run.json: meta: required field is missing");
}

TEST(RunFileMalformed, MetaIsNotAnObject) {
  expect_refused(edited([](ojson& d) { d["meta"] = "gpuvs 0.1.0"; }),
                 {"run.json: meta: expected an object, got string"});
}

TEST(RunFileMalformed, MetaArgvWrongType) {
  expect_refused(edited([](ojson& d) { d["meta"]["argv"] = "gpuvs bench"; }),
                 {"run.json: meta.argv: expected an array, got string"});
  expect_refused(edited([](ojson& d) { d["meta"]["argv"][2] = 7; }),
                 {"run.json: meta.argv[2]: expected a string, got integer"});
}

TEST(RunFileMalformed, RequiredStringIsNull) {
  expect_refused(edited([](ojson& d) { d["system"]["gpus"][0]["uuid"] = nullptr; }),
                 {"run.json: system.gpus[0].uuid: expected a string, got null"});
}

TEST(RunFileMalformed, ResultsNotAnArray) {
  expect_refused(edited([](ojson& d) { d["results"] = ojson::object(); }),
                 {"run.json: results: expected an array, got object"});
  expect_refused(edited([](ojson& d) { d["results"][1] = 5; }),
                 {"run.json: results[1]: expected an object, got integer"});
}

TEST(RunFileMalformed, ResultMissingOrEmptyId) {
  expect_refused(edited([](ojson& d) { d["results"][1].erase("id"); }),
                 {"run.json: results[1].id: required field is missing"});
  expect_refused(edited([](ojson& d) { d["results"][0]["id"] = ""; }),
                 {"run.json: results[0].id: must not be empty"});
}

TEST(RunFileMalformed, ValueIsAString) {
  expect_refused(edited([](ojson& d) { d["results"][0]["value"] = "4.2 TB/s"; }),
                 {"run.json: results[0].value: expected a number, got string"});
}

TEST(RunFileMalformed, ValueIsNull) {
  expect_refused(edited([](ojson& d) { d["results"][0]["value"] = nullptr; }),
                 {"run.json: results[0].value: expected a number, got null"});
}

TEST(RunFileMalformed, SampleIsNotANumber) {
  expect_refused(edited([](ojson& d) { d["results"][0]["samples"][3] = true; }),
                 {"run.json: results[0].samples[3]: expected a number, got boolean"});
}

TEST(RunFileMalformed, IntegerFieldGetsAFraction) {
  expect_refused(edited([](ojson& d) { d["system"]["gpus"][0]["sm_count"] = 132.5; }),
                 {"run.json: system.gpus[0].sm_count: expected an integer, got number"});
}

TEST(RunFileMalformed, IntegerOutOfRange) {
  expect_refused(edited([](ojson& d) { d["system"]["gpus"][0]["sm_count"] = 3000000000LL; }),
                 {"system.gpus[0].sm_count: integer 3000000000 is out of range"});
  expect_refused(
      edited([](ojson& d) { d["system"]["gpus"][0]["memory_total_bytes"] = UINT64_MAX; }),
      {"system.gpus[0].memory_total_bytes: integer 18446744073709551615 is out of range"});
}

TEST(RunFileMalformed, PciDeviceIdOutOfUint32Range) {
  expect_refused(edited([](ojson& d) { d["system"]["gpus"][0]["pci_device_id"] = 4294967296LL; }),
                 {"run.json: system.gpus[0].pci_device_id: integer 4294967296 is out of range "
                  "[0, 4294967295]"});
  expect_refused(edited([](ojson& d) { d["system"]["gpus"][0]["pci_device_id"] = -1; }),
                 {"run.json: system.gpus[0].pci_device_id: integer -1 is out of range"});
  expect_refused(edited([](ojson& d) { d["system"]["gpus"][0]["pci_device_id"] = "0x233510de"; }),
                 {"system.gpus[0].pci_device_id: expected an integer, got string"});
}

TEST(RunFileMalformed, ParameterIsObjectOrArray) {
  expect_refused(edited([](ojson& d) {
                   d["results"][0]["parameters"]["dtype"] = {{"a", 1}};
                 }),
                 {"run.json: results[0].parameters.dtype: expected a boolean, number or string, "
                  "got object"});
  expect_refused(edited([](ojson& d) {
                   d["results"][0]["parameters"]["dtype"] = {1, 2};
                 }),
                 {"results[0].parameters.dtype: expected a boolean, number or string, got array"});
  expect_refused(edited([](ojson& d) { d["results"][0]["parameters"]["dtype"] = nullptr; }),
                 {"results[0].parameters.dtype: expected a boolean, number or string, got null"});
}

TEST(RunFileMalformed, OddKeyStaysOnOneLine) {
  const std::string msg = expect_refused(
      edited([](ojson& d) { d["results"][0]["parameters"]["line\none \"q\""] = ojson::array(); }),
      {"run.json: results[0].parameters[\"line\\none \\\"q\\\"\"]: expected"});
  const std::string long_key(100000, 'k');
  expect_refused(edited([&](ojson& d) { d["results"][0]["parameters"][long_key] = nullptr; }),
                 {"results[0].parameters[\"kkkk", "...\"]: expected"});
}

TEST(RunFileMalformed, UnknownStatus) {
  expect_refused(edited([](ojson& d) { d["results"][1]["status"] = "great"; }),
                 {"run.json: results[1].status: unknown status \"great\" (expected ok, invalid, "
                  "unsupported or error)"});
  expect_refused(edited([](ojson& d) { d["results"][1]["status"] = "OK"; }),
                 {"results[1].status: unknown status \"OK\""});
}

// ---------------------------------------------------------------- validation rules

TEST(RunFileMalformed, NegativeSampleCount) {
  expect_refused(edited([](ojson& d) { d["results"][0]["stats"]["samples"] = -1; }),
                 {"run.json: results[0].stats.samples: must be >= 0, got -1"});
  expect_refused(edited([](ojson& d) { d["results"][0]["clocks"]["samples"] = -3; }),
                 {"run.json: results[0].clocks.samples: must be >= 0, got -3"});
}

TEST(RunFileMalformed, NegativeNoise) {
  expect_refused(edited([](ojson& d) { d["results"][0]["stats"]["noise"] = -0.01; }),
                 {"run.json: results[0].stats.noise: must be >= 0, got -0.01"});
}

TEST(RunFileMalformed, StatsOutOfOrder) {
  expect_refused(edited([](ojson& d) { d["results"][0]["stats"]["min"] = 5e12; }),
                 {"run.json: results[0].stats: min <= median <= max does not hold"});
  expect_refused(edited([](ojson& d) { d["results"][0]["stats"]["max"] = 1.0; }),
                 {"results[0].stats: min <= median <= max"});
  // With no samples the order is not checked: the figures carry no meaning.
  EXPECT_NO_THROW(
      parse_run_file(edited([](ojson& d) { d["results"][1]["stats"]["min"] = 3.0; }), "run.json"));
}

TEST(RunFileMalformed, NegativeEfficiency) {
  expect_refused(edited([](ojson& d) { d["results"][0]["efficiency"] = -0.5; }),
                 {"run.json: results[0].efficiency: must be >= 0, got -0.5"});
}

TEST(RunFileMalformed, DeviceIndexOutOfRange) {
  expect_refused(edited([](ojson& d) {
                   d["results"][0]["devices"] = {0, 1};
                 }),
                 {"run.json: results[0].devices[1]: GPU index 1 is out of range (system.gpus has "
                  "1 entries)"});
  expect_refused(edited([](ojson& d) { d["results"][1]["devices"] = {-1}; }),
                 {"run.json: results[1].devices[0]: GPU index -1 is out of range"});
}

TEST(RunFileMalformed, EmptyUnitOnOkResult) {
  expect_refused(edited([](ojson& d) { d["results"][0]["unit"] = ""; }),
                 {"run.json: results[0].unit: must not be empty when status is ok"});
  // An unsupported result may have no unit.
  EXPECT_NO_THROW(
      parse_run_file(edited([](ojson& d) { d["results"][1]["unit"] = ""; }), "run.json"));
}

TEST(RunFileMalformed, NegativeGpuSizes) {
  expect_refused(edited([](ojson& d) { d["system"]["gpus"][0]["sm_count"] = -132; }),
                 {"run.json: system.gpus[0].sm_count: must be >= 0, got -132"});
  expect_refused(edited([](ojson& d) { d["system"]["gpus"][0]["memory_total_bytes"] = -1; }),
                 {"run.json: system.gpus[0].memory_total_bytes: must be >= 0, got -1"});
}

TEST(RunFileMalformed, ZeroIterationsPerSample) {
  expect_refused(edited([](ojson& d) { d["results"][0]["timing"]["iterations_per_sample"] = 0; }),
                 {"run.json: results[0].timing.iterations_per_sample: must be >= 1, got 0"});
}

TEST(RunFileMalformed, OptionalObjectOfWrongType) {
  expect_refused(edited([](ojson& d) { d["results"][0]["peak"] = 4.8e12; }),
                 {"run.json: results[0].peak: expected an object, got number"});
  expect_refused(
      edited([](ojson& d) { d["results"][0]["clocks"]["throttle_reasons"] = {1}; }),
      {"run.json: results[0].clocks.throttle_reasons[0]: expected a string, got integer"});
}

TEST(RunFileMalformed, ErrorEntryIncomplete) {
  expect_refused(edited([](ojson& d) { d["errors"][0].erase("message"); }),
                 {"run.json: errors[0].message: required field is missing"});
}

// ---------------------------------------------------------------- stats.p99

TEST(RunFileMalformed, P99OutsideMinMax) {
  expect_message(edited([](ojson& d) { d["results"][0]["stats"]["p99"] = 5e12; }),
                 "run.json: results[0].stats.p99: min <= p99 <= max does not hold (min "
                 "4198000000000, p99 5000000000000, max 4221000000000)");
  expect_message(edited([](ojson& d) { d["results"][0]["stats"]["p99"] = 1.0; }),
                 "run.json: results[0].stats.p99: min <= p99 <= max does not hold (min "
                 "4198000000000, p99 1, max 4221000000000)");
  // The bounds themselves are fine.
  EXPECT_NO_THROW(parse_run_file(
      edited([](ojson& d) { d["results"][0]["stats"]["p99"] = 4198000000000.0; }), "run.json"));
  // Missing (files written before p99) and null are both no p99.
  EXPECT_NO_THROW(
      parse_run_file(edited([](ojson& d) { d["results"][0]["stats"].erase("p99"); }), "run.json"));
  // With no samples the bounds are not checked, as for the median.
  EXPECT_NO_THROW(
      parse_run_file(edited([](ojson& d) { d["results"][1]["stats"]["p99"] = 3.0; }), "run.json"));
}

TEST(RunFileMalformed, P99WrongType) {
  expect_message(edited([](ojson& d) { d["results"][0]["stats"]["p99"] = "4.2e12"; }),
                 "run.json: results[0].stats.p99: expected a number, got string");
}

// ---------------------------------------------------------------- comm

TEST(RunFileMalformed, CommIsNotAnObject) {
  expect_message(edited([](ojson& d) { d["comm"] = "mpi"; }),
                 "run.json: comm: expected an object, got string");
  expect_message(edited([](ojson& d) { d["comm"] = ojson::array(); }),
                 "run.json: comm: expected an object, got array");
  // Absent and null both mean no collectives ran.
  EXPECT_NO_THROW(parse_run_file(edited([](ojson& d) { d.erase("comm"); }), "run.json"));
}

TEST(RunFileMalformed, CommFieldMissing) {
  for (const char* key : {"launch", "world_size", "ranks", "nccl_env", "timeout_s"}) {
    expect_message(with_comm([&](ojson& c) { c.erase(key); }),
                   std::string("run.json: comm.") + key + ": required field is missing");
  }
  for (const char* key :
       {"rank", "host", "pid", "local_rank", "device", "gpu_name", "gpu_uuid", "pci_bus_id"}) {
    expect_message(with_comm([&](ojson& c) { c["ranks"][1].erase(key); }),
                   std::string("run.json: comm.ranks[1].") + key + ": required field is missing");
  }
}

TEST(RunFileMalformed, CommUnknownLaunch) {
  expect_message(with_comm([](ojson& c) { c["launch"] = "srun"; }),
                 "run.json: comm.launch: unknown launch \"srun\" (expected single-process, mpi, "
                 "nccl-comm-id or file)");
  expect_message(with_comm([](ojson& c) { c["launch"] = "MPI"; }),
                 "run.json: comm.launch: unknown launch \"MPI\" (expected single-process, mpi, "
                 "nccl-comm-id or file)");
  expect_message(with_comm([](ojson& c) { c["launch"] = 1; }),
                 "run.json: comm.launch: expected a string, got integer");
}

TEST(RunFileMalformed, CommWorldSizeBelowOne) {
  expect_message(with_comm([](ojson& c) { c["world_size"] = 0; }),
                 "run.json: comm.world_size: must be >= 1, got 0");
  expect_message(with_comm([](ojson& c) { c["world_size"] = -2; }),
                 "run.json: comm.world_size: must be >= 1, got -2");
}

TEST(RunFileMalformed, CommRankCountIsNotWorldSize) {
  expect_message(with_comm([](ojson& c) { c["ranks"].erase(1); }),
                 "run.json: comm.ranks: has 1 entries, world_size is 2");
  expect_message(with_comm([](ojson& c) { c["world_size"] = 3; }),
                 "run.json: comm.ranks: has 2 entries, world_size is 3");
  expect_message(with_comm([](ojson& c) { c["ranks"] = ojson::object(); }),
                 "run.json: comm.ranks: expected an array, got object");
  expect_message(with_comm([](ojson& c) { c["ranks"][0] = 0; }),
                 "run.json: comm.ranks[0]: expected an object, got integer");
}

TEST(RunFileMalformed, CommRankIsNotItsIndex) {
  expect_message(with_comm([](ojson& c) { c["ranks"][1]["rank"] = 0; }),
                 "run.json: comm.ranks[1].rank: must equal its index in comm.ranks (1), got 0");
  expect_message(with_comm([](ojson& c) { std::swap(c["ranks"][0], c["ranks"][1]); }),
                 "run.json: comm.ranks[0].rank: must equal its index in comm.ranks (0), got 1");
  expect_message(with_comm([](ojson& c) { c["ranks"][0]["rank"] = -1; }),
                 "run.json: comm.ranks[0].rank: must equal its index in comm.ranks (0), got -1");
}

TEST(RunFileMalformed, CommRankEmptyHost) {
  expect_message(with_comm([](ojson& c) { c["ranks"][1]["host"] = ""; }),
                 "run.json: comm.ranks[1].host: must not be empty");
}

TEST(RunFileMalformed, CommRankNegativeNumbers) {
  expect_message(with_comm([](ojson& c) { c["ranks"][0]["pid"] = -1; }),
                 "run.json: comm.ranks[0].pid: must be >= 0, got -1");
  expect_message(with_comm([](ojson& c) { c["ranks"][1]["local_rank"] = -1; }),
                 "run.json: comm.ranks[1].local_rank: must be >= 0, got -1");
  expect_message(with_comm([](ojson& c) { c["ranks"][1]["device"] = -3; }),
                 "run.json: comm.ranks[1].device: must be >= 0, got -3");
  expect_message(with_comm([](ojson& c) { c["ranks"][0]["pid"] = 4294967296LL; }),
                 "run.json: comm.ranks[0].pid: integer 4294967296 is out of range [-2147483648, "
                 "2147483647]");
  // Zero is a real pid, local rank and device.
  EXPECT_NO_THROW(parse_run_file(with_comm([](ojson& c) {
                                   c["ranks"][0]["pid"] = 0;
                                   c["ranks"][1]["device"] = 0;
                                 }),
                                 "run.json"));
}

TEST(RunFileMalformed, CommNcclEnv) {
  expect_message(with_comm([](ojson& c) { c["nccl_env"]["CUDA_VISIBLE_DEVICES"] = "0,1"; }),
                 "run.json: comm.nccl_env.CUDA_VISIBLE_DEVICES: not an NCCL variable (must start "
                 "with NCCL_)");
  expect_message(with_comm([](ojson& c) { c["nccl_env"]["nccl_debug"] = "INFO"; }),
                 "run.json: comm.nccl_env.nccl_debug: not an NCCL variable (must start with "
                 "NCCL_)");
  expect_message(with_comm([](ojson& c) { c["nccl_env"][""] = "x"; }),
                 "run.json: comm.nccl_env[\"\"]: not an NCCL variable (must start with NCCL_)");
  expect_message(with_comm([](ojson& c) { c["nccl_env"]["NCCL_DEBUG"] = 1; }),
                 "run.json: comm.nccl_env.NCCL_DEBUG: expected a string, got integer");
  expect_message(with_comm([](ojson& c) { c["nccl_env"]["NCCL_DEBUG"] = nullptr; }),
                 "run.json: comm.nccl_env.NCCL_DEBUG: expected a string, got null");
  expect_message(with_comm([](ojson& c) { c["nccl_env"] = ojson::array({"NCCL_DEBUG=WARN"}); }),
                 "run.json: comm.nccl_env: expected an object, got array");
  EXPECT_NO_THROW(
      parse_run_file(with_comm([](ojson& c) { c["nccl_env"] = ojson::object(); }), "run.json"));
}

TEST(RunFileMalformed, CommTimeoutNotPositive) {
  expect_message(with_comm([](ojson& c) { c["timeout_s"] = 0; }),
                 "run.json: comm.timeout_s: must be > 0, got 0");
  expect_message(with_comm([](ojson& c) { c["timeout_s"] = -1.5; }),
                 "run.json: comm.timeout_s: must be > 0, got -1.5");
  expect_message(with_comm([](ojson& c) { c["timeout_s"] = "300"; }),
                 "run.json: comm.timeout_s: expected a number, got string");
}

TEST(RunFileMalformed, CommDuplicateKey) {
  // The parser refuses it before the fields are read, here as anywhere.
  std::string text = with_comm([](ojson&) {});
  const std::string from = "\"launch\": \"mpi\",";
  ASSERT_NE(text.find(from), std::string::npos);
  text.replace(text.find(from), from.size(), from + " \"launch\": \"file\",");
  expect_message(text,
                 "run.json: comm.launch: duplicate key (each key may appear once per object)");
}

// ---------------------------------------------------------------- files

TEST(RunFileMalformed, FixtureFilesNameThePath) {
  const fs::path newer = kRuns / "newer_version.json";
  try {
    load_run_file(newer);
    ADD_FAILURE() << "accepted " << newer;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kUsage);
    EXPECT_EQ(std::string(e.what()), newer.string() +
                                         ": schema gpuvs.run/2 is newer than this gpuvs reads "
                                         "(gpuvs.run/1); upgrade gpuvs");
  }
  const fs::path foreign = kRuns / "foreign_nvbench.json";
  try {
    load_run_file(foreign);
    ADD_FAILURE() << "accepted " << foreign;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kUsage);
    EXPECT_EQ(std::string(e.what()),
              foreign.string() + ": not a gpuvs run file (schema \"nvbench/1\")");
  }
}

TEST(RunFileMalformed, NameWithNewlineStaysOneLine) {
  try {
    parse_run_file("", "dir\nrun.json");
    ADD_FAILURE() << "accepted an empty file";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind("dir\\nrun.json: not valid JSON at byte 0: ", 0), 0u) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace gpuvs
