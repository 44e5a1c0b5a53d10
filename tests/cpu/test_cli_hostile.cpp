// Hostile files handed to the real binary: every one is a usage error (exit 2) with
// one line naming the file (and the line or field), found before anything is
// written: no internal error, no half-written --out folder, no figure built on an
// impossible value. Two classes: input that used to end in an internal error (text
// that is not UTF-8, subnormal numbers, claims that overflow on conversion), and
// input that used to pass unchecked (duplicate catalogue ids, files without end,
// NUL bytes, GPU indices, impossible figures).
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_runner.h"

namespace {

namespace fs = std::filesystem;
using gpuvs_test::CliOutcome;
using gpuvs_test::run_gpuvs;
using ojson = nlohmann::ordered_json;

std::string source(const std::string& rel) {
  return std::string(GPUVS_SOURCE_DIR) + "/" + rel;
}

class CliHostile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gpuvs_cli_hostile_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    out_ = dir_ / "out";
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path write(const std::string& name, const std::string& text) {
    const fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }
  // A reference run file changed by `edit`, written as `name`.
  fs::path edited_run(const std::string& reference, const std::string& name,
                      const std::function<void(ojson&)>& edit) {
    std::ifstream in(source("data/reference/" + reference));
    ojson doc = ojson::parse(in);
    edit(doc);
    return write(name, doc.dump(1));
  }

  // Exit 2, nothing on stdout, one line on stderr that starts with `starts` (after
  // "gpuvs: " or the command's prefix) and contains `says`, and no --out folder.
  void expect_refused(const std::string& args, const std::string& says) {
    SCOPED_TRACE(args);
    const CliOutcome o = run_gpuvs(args);
    EXPECT_EQ(o.code, 2) << o.err;
    EXPECT_TRUE(o.out.empty()) << o.out.substr(0, 500);
    ASSERT_FALSE(o.err.empty());
    EXPECT_EQ(o.err.find('\n'), o.err.size() - 1) << "not one line: " << o.err;
    EXPECT_NE(o.err.find(says), std::string::npos) << o.err;
    EXPECT_EQ(o.err.find("internal error"), std::string::npos) << o.err;
    EXPECT_FALSE(fs::exists(out_) && !fs::is_empty(out_)) << "outputs written before the check";
  }

  std::string out_arg() const { return " --out " + out_.string(); }

  fs::path dir_;
  fs::path out_;
};

constexpr const char* kClaimsHeader = "gpu,metric,value,unit,source,precision,setting\n";

TEST_F(CliHostile, ClaimsThatAreNotUtf8AreRefusedBeforeAnyOutput) {
  const std::pair<const char*, const char*> cases[] = {
      {"latin1.csv", "H200 caf\xe9,fp16,989,TFLOPS,,,\n"},
      {"source.csv", "H200,fp16,989,TFLOPS,slide \xff\xfe,,\n"},
      {"setting.csv", "A100,resnet-50 training,2470,img/s,,mixed,batch \x80\n"},
      {"overlong.csv", "H200,fp16,989,TFLOPS,\xc0\xaf,,\n"},
  };
  for (const auto& [name, body] : cases) {
    const fs::path f = write(name, std::string(kClaimsHeader) + body);
    expect_refused("compare H200-SXM --claims " + f.string() + out_arg(),
                   f.string() + ":2: byte 0x");
    expect_refused("--json compare --claims " + f.string(), "is not UTF-8");
  }
}

TEST_F(CliHostile, ClaimsThatOverflowOnConversionAreRefused) {
  for (const char* body : {"H200,memory bandwidth,1e300,PB/s,,,\n", "H200,fp16,1e306,PFLOPS,,,\n",
                           "H200,memory,1e299,TB,,,\n"}) {
    const fs::path f = write("overflow.csv", std::string(kClaimsHeader) + body);
    expect_refused("compare H200-SXM --claims " + f.string() + out_arg(),
                   f.string() + ":2: value ");
  }
  const fs::path tiny =
      write("tiny.csv", std::string(kClaimsHeader) + "H200,fp16,1e-310,TFLOPS,,,\n");
  expect_refused("compare --claims " + tiny.string(), "too small to be a figure");
}

TEST_F(CliHostile, SubnormalNumbersAreNoInternalError) {
  // Where the unit bounds a figure, a subnormal one is refused with the field ...
  const fs::path value = edited_run("h200-sxm-run.json", "value.json",
                                    [](ojson& d) { d["results"][2]["value"] = 1e-310; });
  expect_refused("compare " + value.string(), "results[2].value: 1e-310 is not a possible");
  const fs::path cat = write("cat.json", [] {
    std::ifstream in(source("data/catalogue/gpus.json"));
    ojson doc = ojson::parse(in);
    doc["gpus"][0]["figures"]["memory.bandwidth"]["value"] = 1e-320;
    return doc.dump(1);
  }());
  expect_refused("specs list --catalogue " + cat.string(), cat.string() + ": gpus[0].figures");
  // ... and where it does not (noise, efficiency), it is printed like any small number.
  const fs::path noise = edited_run("h200-sxm-run.json", "noise.json", [](ojson& d) {
    for (ojson& r : d["results"]) {
      r["stats"]["noise"] = 1e-310;
      r["stats"]["stddev"] = 1e-310;
      if (!r["efficiency"].is_null()) r["efficiency"] = 1e-310;
    }
  });
  for (const char* format : {"table", "md", "csv", "json"}) {
    const CliOutcome o =
        run_gpuvs("compare " + noise.string() + " A100 --format " + format + out_arg());
    EXPECT_EQ(o.code, 0) << format << ": " << o.err;
    EXPECT_EQ(o.err.find("internal error"), std::string::npos) << o.err;
  }
}

TEST_F(CliHostile, LabelsAndPathsThatAreNotUtf8) {
  expect_refused(std::string("compare H200-SXM --label 'caf\xe9'") + out_arg(),
                 "--label \"caf\\xe9\": byte 3 is not UTF-8");
  // A file name need not be UTF-8 (Latin-1 file systems): JSON shows it with U+FFFD.
  const fs::path latin1 = edited_run("h200-sxm-run.json", "r\xe9sultat.json", [](ojson&) {});
  const CliOutcome o = run_gpuvs("--json compare '" + latin1.string() + "' A100");
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_TRUE(nlohmann::json::accept(o.out)) << o.out.substr(0, 300);
}

TEST_F(CliHostile, PricesThatAreNotUtf8AreRefused) {
  const fs::path p = write(
      "prices.csv", "# tarifs de caf\xe9\ngpu,price_per_gpu_hour,currency\nH200-SXM,3.5,EUR\n");
  expect_refused("advise --model 7B --prices " + p.string(),
                 p.string() + ":1: byte 0xe9 is not UTF-8");
  const fs::path sub = write("sub.csv", "gpu,price_per_gpu_hour,currency\nH200-SXM,1e-310,EUR\n");
  expect_refused("advise --model 7B --prices " + sub.string(), sub.string() + ":2: price");
}

TEST_F(CliHostile, DuplicateCatalogueIdsAreRefused) {
  std::ifstream in(source("data/catalogue/gpus.json"));
  ojson doc = ojson::parse(in);
  ojson copy = doc["gpus"][0];
  const std::string id = copy["id"];
  copy["name"] = "Not the first";
  copy["aliases"] = ojson::array();
  doc["gpus"].push_back(copy);
  const fs::path cat = write("dup.json", doc.dump(1));
  const std::string last = "gpus[" + std::to_string(doc["gpus"].size() - 1) + "].id";
  expect_refused("specs show " + id + " --catalogue " + cat.string(), cat.string() + ": " + last);
  expect_refused("compare " + id + " --catalogue " + cat.string(), "already a name of");
  expect_refused("advise --model 7B --catalogue " + cat.string(), "already a name of");
}

TEST_F(CliHostile, FilesWithoutEndOrTooLargeAreRefused) {
  expect_refused("compare H200-SXM --claims /dev/zero" + out_arg(),
                 "/dev/zero: cannot read: it is a character device");
  expect_refused("compare /dev/zero", "/dev/zero: cannot read: it is a character device");
  expect_refused("specs list --catalogue /dev/zero", "/dev/zero: cannot read");
  expect_refused("advise --model 7B --prices /dev/zero", "/dev/zero: cannot read");
  expect_refused("advise --model 7B --run /dev/zero", "/dev/zero: cannot read");
  expect_refused("compare H200-SXM --claims " + dir_.string(), "cannot read: Is a directory");
  const fs::path big =
      write("big.csv", std::string(kClaimsHeader) + std::string((1 << 20) + 10, '#'));
  expect_refused("compare H200-SXM --claims " + big.string() + out_arg(),
                 "file is larger than 1 MiB, the limit for a claims file");
}

TEST_F(CliHostile, BytesAfterANulInARunFileAreRefused) {
  std::ifstream in(source("data/reference/h200-sxm-run.json"), std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string valid = ss.str();
  const fs::path tail = write("tail.json", valid + std::string("\0{\"more\": 1}", 12));
  expect_refused("compare " + tail.string(), tail.string() + ": not valid JSON at byte");
  expect_refused("advise --model 7B --run " + tail.string(), "a NUL byte");
  const fs::path inside =
      write("inside.json", valid.substr(0, 100) + std::string(1, '\0') + valid.substr(100));
  expect_refused("compare " + inside.string(), "not valid JSON at byte 100: a NUL byte");
}

TEST_F(CliHostile, GpuIndicesMustBeTheirPositions) {
  const std::pair<const char*, std::function<void(ojson&)>> cases[] = {
      {"swapped.json",
       [](ojson& d) {
         d["system"]["gpus"][0]["index"] = 1;
         d["system"]["gpus"][1]["index"] = 0;
       }},
      {"duplicate.json", [](ojson& d) { d["system"]["gpus"][1]["index"] = 0; }},
      {"negative.json", [](ojson& d) { d["system"]["gpus"][0]["index"] = -1; }},
  };
  for (const auto& [name, edit] : cases) {
    const fs::path f = edited_run("h200x2-run.json", name, edit);
    expect_refused("compare " + f.string() + out_arg(), ".index: must equal its position");
  }
}

TEST_F(CliHostile, ImpossibleFiguresAreRefusedNotShown) {
  const fs::path negative = edited_run("h200-sxm-run.json", "negative.json",
                                       [](ojson& d) { d["results"][2]["value"] = -4.28e12; });
  expect_refused("compare " + negative.string() + " A100" + out_arg(),
                 "results[2].value: -4.28e+12 is not a possible bandwidth (B/s)");
  // A 1e-300 FLOP/s GEMM made the advisor call a model that fits "fits".
  const fs::path slow = edited_run("h200-sxm-run.json", "slow.json",
                                   [](ojson& d) { d["results"][31]["value"] = 1e-300; });
  expect_refused("advise --model 7B --run " + slow.string(),
                 "results[31].value: 1e-300 is not a possible compute rate (FLOP/s)");
  const fs::path huge = edited_run("h200-sxm-run.json", "huge.json",
                                   [](ojson& d) { d["results"][31]["samples"][0] = 1e30; });
  expect_refused("compare " + huge.string(), "results[31].samples[0]: 1e+30 is not a possible");
}

}  // namespace
