// The forms of a tuned result: the env lines go through bash and the Python literal
// through Python's own parser, with hostile values that must come out verbatim or
// not at all; the table and detect's lines stay one line per row whatever the text.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "scratch_dir_test.h"
#include "tune/emit.h"
#include "tune_test_util.h"

namespace {

namespace fs = std::filesystem;
using namespace gpuvs;
using namespace gpuvs::tune;
using gpuvs_test::sample_device;

struct Ran {
  int code = -1;
  std::string out;
};

Ran run(const std::string& cmd) {
  Ran r;
  FILE* pipe = ::popen(cmd.c_str(), "r");
  if (pipe == nullptr) return r;
  std::array<char, 4096> buf{};
  for (std::size_t n; (n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0;)
    r.out.append(buf.data(), n);
  const int status = ::pclose(pipe);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

bool have(const char* program) {
  return run(std::string("command -v ") + program + " >/dev/null 2>&1").code == 0;
}

class TuneEmit : public gpuvs_test::ScratchDirTest {
 protected:
  TuneEmit() : ScratchDirTest("gpuvs_tune_emit") {}

  fs::path write(const std::string& name, const std::string& content) {
    std::ofstream(dir_ / name, std::ios::binary) << content;
    return dir_ / name;
  }
  // What bash sees in $NAME after sourcing `script` under set -eu.
  Ran sourced(const std::string& script, const std::string& name) {
    const fs::path file = write("env.sh", script);
    return run("bash -c 'set -eu; source \"$0\"; printf %s \"$" + name + "\"' " + file.string());
  }
};

Setting env_setting(std::string env, ParamValue value, std::vector<std::string> scope = {"nccl"}) {
  Setting s;
  s.scope = std::move(scope);
  s.key = env;
  s.env = std::move(env);
  s.value = std::move(value);
  s.why = "measured";
  return s;
}

TEST_F(TuneEmit, EnvValuesComeOutOfBashVerbatim) {
  if (!have("bash")) GTEST_SKIP() << "no bash on PATH";
  const std::string hostile = "it's \"$HOME\" `id` $(id) \\ ; exit 1\nsecond line\t!";
  DeviceTune d = sample_device();
  d.settings = {env_setting("NCCL_ALGO", hostile), env_setting("NCCL_BUFFSIZE", int64_t{4194304}),
                env_setting("GPUVS_RATIO", 1.5)};
  d.fingerprint.name = "H200\n; touch /tmp/pwned #";
  TuneDocument doc;
  doc.devices.push_back(d);
  const std::string script = render_tune_env(doc);
  for (std::size_t at = 0; at < script.size();) {
    const std::size_t end = script.find('\n', at);
    const std::string line = script.substr(at, end - at);
    if (line.rfind("export NCCL_ALGO=", 0) == 0) break;  // its value spans lines
    EXPECT_TRUE(line.rfind("# ", 0) == 0 || line.rfind("export ", 0) == 0) << line;
    at = end + 1;
  }
  const Ran algo = sourced(script, "NCCL_ALGO");
  EXPECT_EQ(algo.code, 0) << script;
  EXPECT_EQ(algo.out, hostile) << script;
  EXPECT_EQ(sourced(script, "NCCL_BUFFSIZE").out, "4194304");
  EXPECT_EQ(sourced(script, "GPUVS_RATIO").out, "1.5");
}

TEST_F(TuneEmit, EnvLeavesOutWhatItCannotSayExactly) {
  DeviceTune d = sample_device();
  d.settings = {
      env_setting("BAD-NAME", std::string("x")), env_setting("NCCL_ESC", std::string("a\x1b[2Jb")),
      env_setting("NCCL_ALGO", std::string("Tree"), {"nccl", "all_reduce", "1GiB-8GiB"}),
      env_setting("NCCL_ALGO", std::string("Ring"), {"nccl", "all_reduce", "8MiB-64MiB"})};
  TuneDocument doc;
  doc.devices.push_back(d);
  const std::string script = render_tune_env(doc);
  EXPECT_EQ(script.find("\nexport "), std::string::npos) << script;
  EXPECT_NE(script.find("# BAD-NAME is not a variable name"), std::string::npos) << script;
  EXPECT_NE(script.find("# NCCL_ESC not exported: its value holds a control character"),
            std::string::npos)
      << script;
  EXPECT_NE(
      script.find("# NCCL_ALGO not exported: the settings disagree (GPU 0: Tree, GPU 0: Ring)"),
      std::string::npos)
      << script;
  EXPECT_NE(script.find("# No environment variable to set."), std::string::npos);
}

TEST_F(TuneEmit, SeveralGpusExportOnlyWhatTheyAgreeOn) {
  DeviceTune a = sample_device("GPU-a");
  DeviceTune b = sample_device("GPU-b");
  b.gpu_index = 1;
  a.settings = {env_setting("NCCL_ALGO", std::string("Tree")),
                env_setting("NCCL_PROTO", std::string("Simple")),
                env_setting("NCCL_MIN_NCHANNELS", int64_t{16})};
  b.settings = {env_setting("NCCL_ALGO", std::string("Tree")),
                env_setting("NCCL_PROTO", std::string("LL128"))};
  TuneDocument doc;
  doc.devices = {a, b};
  const std::string script = render_tune_env(doc);
  EXPECT_NE(script.find("\nexport NCCL_ALGO='Tree'\n"), std::string::npos) << script;
  EXPECT_EQ(script.find("export NCCL_PROTO"), std::string::npos) << script;
  EXPECT_NE(
      script.find("NCCL_PROTO not exported: the settings disagree (GPU 0: Simple, GPU 1: LL128)"),
      std::string::npos)
      << script;
  EXPECT_NE(script.find("NCCL_MIN_NCHANNELS not exported: set for 1 of the 2 GPUs"),
            std::string::npos)
      << script;
}

TEST(TunePython, Literals) {
  EXPECT_EQ(python_literal(true), "True");
  EXPECT_EQ(python_literal(int64_t{-856}), "-856");
  EXPECT_EQ(python_literal(856.0), "856.0");
  EXPECT_EQ(python_literal(0.1), "0.1");
  EXPECT_EQ(python_literal(1e300), "1e+300");
  EXPECT_EQ(python_string("a\"b\\c\n\x01\x7f é 😀"),
            "\"a\\\"b\\\\c\\n\\x01\\x7f \\u00e9 \\U0001f600\"");
}

TEST_F(TuneEmit, PythonParsesToTheSameValues) {
  if (!have("python3")) GTEST_SKIP() << "no python3 on PATH";
  DeviceTune d = sample_device();
  d.fingerprint.name = "H200 \"x\" '''\n\\ é \u202e";
  d.settings.push_back(env_setting("NCCL_PROTO", std::string("it's $x\n")));
  TuneDocument doc;
  doc.devices.push_back(d);
  const fs::path file = write("tune.py", render_tune_python(doc));
  // Python reads the literal and writes it back as JSON, which is compared here.
  const Ran parsed =
      run("python3 -c 'import ast, json, sys; print(json.dumps(ast.literal_eval(open(sys.argv[1])"
          ".read())))' " +
          file.string());
  ASSERT_EQ(parsed.code, 0) << parsed.out;
  const nlohmann::json j = nlohmann::json::parse(parsed.out);
  EXPECT_EQ(j["schema"], "gpuvs.tune/1");
  const nlohmann::json& dev = j["devices"][0];
  EXPECT_EQ(dev["uuid"], d.fingerprint.uuid);
  EXPECT_EQ(dev["name"], d.fingerprint.name);
  const nlohmann::json& bert = dev["settings"]["bert-large"]["train"];
  EXPECT_EQ(bert["precision"], "bf16");
  EXPECT_TRUE(bert["batch"].is_number_integer());
  EXPECT_EQ(bert["batch"], 856);
  EXPECT_EQ(bert["cuda_graph"], true);
  EXPECT_TRUE(bert["gain"].is_number_float());
  EXPECT_EQ(bert["gain"], 1.1);
  EXPECT_EQ(dev["settings"]["nccl"]["all_reduce"]["1GiB-8GiB"]["NCCL_ALGO"], "Tree");
  EXPECT_EQ(dev["env"]["NCCL_ALGO"], "Tree");
  EXPECT_EQ(dev["env"]["NCCL_PROTO"], "it's $x\n");
  EXPECT_EQ(dev["absent"]["host"], "host.link was not measured");
}

TEST(TuneTable, HostileTextStaysInItsCell) {
  DeviceTune d = sample_device();
  d.settings[0].why = "line\nbreak \x1b]0;title\x07";
  d.settings[3].caveat = "cave\nat";
  d.absent[0].why = "x\r\ny";
  TuneDocument doc;
  doc.devices.push_back(d);
  const std::string table = render_tune_table(doc);
  EXPECT_EQ(table.find('\x1b'), std::string::npos);
  EXPECT_EQ(table.find('\r'), std::string::npos);
  EXPECT_NE(table.find("line\\nbreak"), std::string::npos) << table;
  EXPECT_NE(table.find("cave\\nat"), std::string::npos) << table;
  EXPECT_NE(table.find("model.bert-large.train.bf16 @ batch=856, graph=true, precision=bf16, "
                       "ratio=1 = 1856 seq/s"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("NCCL_ALGO=Tree"), std::string::npos) << table;
  EXPECT_NE(table.find("Not recommended:\n  host: x\\x0d\\ny\n"), std::string::npos) << table;
  EXPECT_EQ(render_tune_table(TuneDocument{}), "No tuned result.\n");
}

TEST(TuneDetect, EachKindOfLookup) {
  Lookup hit;
  hit.kind = Lookup::Kind::kHit;
  hit.entry = sample_device();
  const std::string shown = render_detect_entry(0, hit);
  EXPECT_NE(shown.find("GPU 0: tuned 2026-12-01T09:30:00Z, run file gpuvs-results/"),
            std::string::npos)
      << shown;
  EXPECT_NE(shown.find("    bert-large train batch = 856: largest\n"), std::string::npos) << shown;
  EXPECT_NE(shown.find("    nccl all_reduce 1GiB-8GiB NCCL_ALGO = NCCL_ALGO=Tree"),
            std::string::npos)
      << shown;

  Lookup missing;
  EXPECT_EQ(render_detect_entry(1, missing), "  GPU 1: not tuned: run gpuvs tune\n");
  Lookup stale;
  stale.kind = Lookup::Kind::kStale;
  stale.entry = sample_device();
  stale.changes = {{"driver_version", "580.95.05", "580.159.04"}};
  EXPECT_EQ(render_detect_entry(0, stale),
            "  GPU 0: stale: driver_version changed: 580.95.05 → 580.159.04: run gpuvs tune\n");
  Lookup corrupt;
  corrupt.kind = Lookup::Kind::kCorrupt;
  corrupt.why = "x.json: not valid JSON at byte 0\n";
  EXPECT_EQ(
      render_detect_entry(0, corrupt),
      "  GPU 0: cache entry unreadable: x.json: not valid JSON at byte 0\\n: run gpuvs tune\n");
}

}  // namespace
