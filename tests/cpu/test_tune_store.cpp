// The stored half of `gpuvs tune`: the fingerprint and what invalidates a cached
// result (every field alone), the coverage rules, gpuvs.tune/1 read back exactly and
// refused when malformed, the cache's corrupt and unwritable cases (a warning and a
// miss, never a throw), and where the cache is.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <string>

#include "core/error.h"
#include "scratch_dir_test.h"
#include "tune/cache.h"
#include "tune/fingerprint.h"
#include "tune/tune_json.h"
#include "tune_test_util.h"
#include "usage_error.h"

namespace {

namespace fs = std::filesystem;
using namespace gpuvs;
using namespace gpuvs::tune;
using gpuvs_test::sample_device;
using gpuvs_test::sample_fingerprint;

// Each field of the fingerprint changed alone, by its JSON name.
const std::map<std::string, std::function<void(Fingerprint&)>>& field_changes() {
  static const std::map<std::string, std::function<void(Fingerprint&)>> changes = {
      {"uuid", [](Fingerprint& f) { f.uuid = "GPU-other"; }},
      {"name", [](Fingerprint& f) { f.name = "NVIDIA H100 80GB HBM3"; }},
      {"driver_version", [](Fingerprint& f) { f.driver_version = "580.95.05"; }},
      {"cuda_driver_version", [](Fingerprint& f) { f.cuda_driver_version = "12.9"; }},
      {"cuda_runtime_version", [](Fingerprint& f) { f.cuda_runtime_version = std::nullopt; }},
      {"cublas_version", [](Fingerprint& f) { f.cublas_version = "13.0.2"; }},
      {"cudnn_version", [](Fingerprint& f) { f.cudnn_version = "9.13.0"; }},
      {"nccl_version", [](Fingerprint& f) { f.nccl_version = "2.27.7"; }},
      {"power_limit_w", [](Fingerprint& f) { f.power_limit_w = 600.0; }},
      {"mig_enabled", [](Fingerprint& f) { f.mig_enabled = true; }},
      {"ecc_enabled", [](Fingerprint& f) { f.ecc_enabled = std::nullopt; }},
  };
  return changes;
}

TEST(TuneFingerprint, EachFieldChangedAloneIsNamedAlone) {
  ASSERT_EQ(field_changes().size(), 11u);
  const Fingerprint cached = sample_fingerprint();
  EXPECT_TRUE(changed_fields(cached, cached).empty());
  for (const auto& [field, change] : field_changes()) {
    Fingerprint now = cached;
    change(now);
    const std::vector<FieldChange> changes = changed_fields(cached, now);
    ASSERT_EQ(changes.size(), 1u) << field;
    EXPECT_EQ(changes[0].field, field);
    EXPECT_NE(changes[0].cached, changes[0].now) << field;
    EXPECT_EQ(describe(changes[0]).rfind(field + " changed: ", 0), 0u) << describe(changes[0]);
  }
}

TEST(TuneFingerprint, ValuesAsText) {
  Fingerprint a = sample_fingerprint();
  Fingerprint b = a;
  b.driver_version = std::nullopt;
  b.power_limit_w = 687.5;
  b.mig_enabled = true;
  const auto changes = changed_fields(a, b);
  ASSERT_EQ(changes.size(), 3u);
  EXPECT_EQ(describe(changes[0]), "driver_version changed: 580.159.04 → unknown");
  EXPECT_EQ(describe(changes[1]), "power_limit_w changed: 700 W → 687.5 W");
  EXPECT_EQ(describe(changes[2]), "mig_enabled changed: off → on");
  // A value from a file cannot break the line.
  b = a;
  b.driver_version = "580\n\x1b[2J";
  EXPECT_EQ(describe(changed_fields(a, b)[0]).find_first_of("\n\x1b"), std::string::npos);
}

TEST(TuneFingerprint, OfASystemsGpu) {
  SystemInfo sys;
  sys.driver_version = "580.159.04";
  sys.cuda_driver_version = "13.0";
  sys.cuda_runtime_version = "13.0";
  sys.cublas_version = "13.1.0";
  sys.cudnn_version = "9.14.0";
  sys.nccl_version = "2.28.3";
  GpuInfo g;
  g.index = 1;
  g.name = "NVIDIA H200";
  g.uuid = "GPU-0a1b2c3d-test";
  g.power_limit_w = 700.0;
  g.mig_enabled = false;
  g.ecc_enabled = true;
  sys.gpus.push_back(g);
  EXPECT_EQ(fingerprint_of(sys, 1), sample_fingerprint());
  EXPECT_THROW(fingerprint_of(sys, 0), Error);
}

TEST(TuneCoverage, ModelsShapesHeadroomBatchQuick) {
  TuneRequest have;
  have.models = {"bert-large", "resnet50"};
  have.gemm_shapes = {"8192x8192x8192:bf16", "4096x4096x4096:fp8"};
  TuneRequest want = have;
  EXPECT_FALSE(covers_problem(have, want));
  want.models = {"resnet50"};
  want.gemm_shapes = {"4096x4096x4096:fp8"};
  EXPECT_FALSE(covers_problem(have, want)) << "a subset is covered";
  want.quick = true;
  EXPECT_FALSE(covers_problem(have, want)) << "a full pass answers a quick request";

  TuneRequest small = have;
  small.models = {"resnet50"};
  EXPECT_NE(covers_problem(small, have).value_or("").find("bert-large"), std::string::npos);
  small = have;
  small.gemm_shapes = {};
  EXPECT_NE(covers_problem(small, have).value_or("").find("8192x8192x8192:bf16"),
            std::string::npos);
  TuneRequest other = have;
  other.headroom = 0.2;
  EXPECT_NE(covers_problem(have, other).value_or("").find("headroom"), std::string::npos);
  other = have;
  other.global_batch = 1024;
  EXPECT_NE(covers_problem(have, other).value_or("").find("global batch 1024"), std::string::npos);
  EXPECT_TRUE(covers_problem(other, have)) << "an entry for a global batch is not one without";
  TuneRequest quick = have;
  quick.quick = true;
  EXPECT_NE(covers_problem(quick, have).value_or("").find("--quick"), std::string::npos);
}

TEST(TuneJson, RoundTripKeepsEveryTypeAndField) {
  TuneDocument doc;
  doc.devices.push_back(sample_device());
  DeviceTune second = sample_device("GPU-second");
  second.gpu_index = 1;
  second.fingerprint.driver_version = std::nullopt;
  second.fingerprint.power_limit_w = std::nullopt;
  second.fingerprint.mig_enabled = std::nullopt;
  second.request.global_batch = 4096;
  second.request.quick = true;
  second.settings[0].why = "quotes \" ' $x `id` \\ é 中 \x7f";
  doc.devices.push_back(second);
  const std::string text = to_json_text(doc);
  const TuneDocument back = parse_tune_document(text, "doc.json");
  EXPECT_EQ(back, doc);
  EXPECT_EQ(to_json_text(back), text);
  // An integer stays an integer, a double a double, even 1.0.
  const Setting& batch = back.devices[0].settings[1];
  EXPECT_TRUE(std::holds_alternative<int64_t>(batch.value));
  EXPECT_TRUE(std::holds_alternative<double>(back.devices[0].settings[3].value));
  EXPECT_TRUE(std::holds_alternative<bool>(back.devices[0].settings[2].value));
  EXPECT_TRUE(std::holds_alternative<double>(batch.rests_on[0].parameters.at("ratio")));
  EXPECT_NE(text.find("\"schema\": \"gpuvs.tune/1\""), std::string::npos);
}

TEST(TuneJson, MalformedIsOneLineNamingTheField) {
  TuneDocument doc;
  doc.devices.push_back(sample_device());
  const nlohmann::json good = nlohmann::json::parse(to_json_text(doc));
  const auto refused = [&](const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json j = good;
    edit(j);
    return gpuvs_test::usage_error_of([&] { parse_tune_document(j.dump(), "t.json"); });
  };
  EXPECT_NE(refused([](auto& j) { j["schema"] = "gpuvs.run/1"; }).find("not a gpuvs tune file"),
            std::string::npos);
  EXPECT_NE(refused([](auto& j) { j.erase("schema"); }).find("no \"schema\""), std::string::npos);
  EXPECT_NE(refused([](auto& j) {
              j["devices"][0].erase("created_at");
            }).find("devices[0].created_at: required field is missing"),
            std::string::npos);
  EXPECT_NE(refused([](auto& j) {
              j["devices"][0]["settings"][1]["value"] = nlohmann::json::array();
            }).find("devices[0].settings[1].value: expected a boolean, number or string"),
            std::string::npos);
  EXPECT_NE(refused([](auto& j) {
              j["devices"][0]["settings"][4]["env"] = "NCCL ALGO; rm";
            }).find("settings[4].env"),
            std::string::npos);
  EXPECT_NE(refused([](auto& j) {
              j["devices"][0]["settings"][1] = j["devices"][0]["settings"][0];
            }).find("a second setting"),
            std::string::npos);
  EXPECT_NE(refused([](auto& j) {
              j["devices"][0]["settings"][1]["scope"] = {"bert-large", "train", "precision"};
            }).find("also the scope of another setting"),
            std::string::npos);
  EXPECT_NE(refused([](auto& j) {
              j["devices"][0]["request"]["headroom"] = 0.95;
            }).find("request.headroom"),
            std::string::npos);
  EXPECT_NE(refused([](auto& j) {
              j["devices"][0]["fingerprint"]["power_limit_w"] = "700";
            }).find("fingerprint.power_limit_w: expected a number, got string"),
            std::string::npos);
  EXPECT_NE(refused([](auto& j) {
              j["devices"][0]["settings"][0]["scope"] = nlohmann::json::array();
            }).find("scope"),
            std::string::npos);
  EXPECT_NE(gpuvs_test::usage_error_of([] {
              parse_tune_document("{\"a\":1,\"a\":2}", "d.json");
            }).find("duplicate key"),
            std::string::npos);
}

TEST(TuneCacheDir, GivenThenXdgThenHome) {
  const auto env = [](std::map<std::string, std::string> vars) -> EnvLookup {
    return [vars](const char* name) -> std::optional<std::string> {
      const auto it = vars.find(name);
      if (it == vars.end()) return std::nullopt;
      return it->second;
    };
  };
  const std::map<std::string, std::string> both = {{"XDG_CACHE_HOME", "/xdg"}, {"HOME", "/home/u"}};
  EXPECT_EQ(default_cache_dir(fs::path("/given"), env(both)), fs::path("/given"));
  EXPECT_EQ(default_cache_dir(std::nullopt, env(both)), fs::path("/xdg/gpuvs/tune"));
  EXPECT_EQ(default_cache_dir(std::nullopt, env({{"XDG_CACHE_HOME", "rel/cache"}, {"HOME", "/h"}})),
            fs::path("/h/.cache/gpuvs/tune"))
      << "a relative XDG_CACHE_HOME is ignored";
  EXPECT_EQ(default_cache_dir(std::nullopt, env({{"XDG_CACHE_HOME", ""}, {"HOME", "/h"}})),
            fs::path("/h/.cache/gpuvs/tune"));
  EXPECT_NE(gpuvs_test::usage_error_of([&] {
              default_cache_dir(std::nullopt, env({}));
            }).find("--cache DIR"),
            std::string::npos);
  EXPECT_NE(gpuvs_test::usage_error_of([&] {
              default_cache_dir(std::nullopt, env({{"XDG_CACHE_HOME", "rel"}}));
            }).find("--cache DIR"),
            std::string::npos);
}

TEST(TuneCacheName, OnlySafeUuids) {
  EXPECT_EQ(cache_file_name("GPU-7d3c1a52-0b1e_x"), "GPU-7d3c1a52-0b1e_x.json");
  for (const char* bad : {"", "../etc/passwd", "GPU/x", "GPU x", ".hidden", "GPU-\n", "GPU-é"})
    EXPECT_FALSE(cache_file_name(bad)) << bad;
}

class TuneCache : public gpuvs_test::ScratchDirTest {
 protected:
  TuneCache() : ScratchDirTest("gpuvs_tune_cache") {}

  void write(const std::string& name, const std::string& content) {
    std::ofstream(dir_ / name, std::ios::binary) << content;
  }
  std::string entry_text(const DeviceTune& d) {
    TuneDocument doc;
    doc.devices.push_back(d);
    return to_json_text(doc);
  }
};

TEST_F(TuneCache, SavedEntryIsAHitAndEachFieldMakesItStale) {
  const DeviceTune d = sample_device();
  EXPECT_EQ(lookup(dir_ / "sub", d.fingerprint, d.request).kind, Lookup::Kind::kMissing);
  ASSERT_FALSE(save(dir_ / "sub", d)) << "folders are made";
  const Lookup hit = lookup(dir_ / "sub", d.fingerprint, d.request);
  ASSERT_EQ(hit.kind, Lookup::Kind::kHit) << describe(hit);
  EXPECT_EQ(*hit.entry, d);
  EXPECT_EQ(hit.file, dir_ / "sub" / (d.fingerprint.uuid + ".json"));
  for (const auto& [field, change] : field_changes()) {
    if (field == "uuid") continue;  // another GPU: another file
    Fingerprint now = d.fingerprint;
    change(now);
    const Lookup stale = lookup(dir_ / "sub", now, d.request);
    ASSERT_EQ(stale.kind, Lookup::Kind::kStale) << field;
    ASSERT_EQ(stale.changes.size(), 1u) << field;
    EXPECT_EQ(stale.changes[0].field, field);
    EXPECT_EQ(describe(stale).rfind("stale: " + field + " changed: ", 0), 0u) << describe(stale);
  }
  TuneRequest more = d.request;
  more.gemm_shapes.push_back("1024x1024x1024:fp16");
  const Lookup partial = lookup(dir_ / "sub", d.fingerprint, more);
  EXPECT_EQ(partial.kind, Lookup::Kind::kNotCovering);
  EXPECT_NE(partial.why.find("1024x1024x1024:fp16"), std::string::npos);
  EXPECT_EQ(lookup(dir_ / "sub", d.fingerprint, std::nullopt).kind, Lookup::Kind::kHit);
}

TEST_F(TuneCache, CorruptEntriesAreAWarningAndAMiss) {
  const DeviceTune d = sample_device();
  const std::string file = d.fingerprint.uuid + ".json";
  const std::string good = entry_text(d);
  DeviceTune other = sample_device("GPU-someone-else");
  const std::map<std::string, std::string> cases = {
      {"garbage", "\x89PNG\r\n\x1a\n garbage"},
      {"empty", ""},
      {"truncated", good.substr(0, good.size() / 2)},
      {"foreign schema", "{\"schema\": \"gpuvs.run/1\", \"devices\": []}"},
      {"not an object", "[1, 2, 3]"},
      {"wrong uuid", entry_text(other)},
      {"two devices",
       [&] {
         TuneDocument two;
         two.devices = {d, d};
         return to_json_text(two);
       }()},
      {"NUL", good.substr(0, 20) + std::string(1, '\0') + good.substr(20)},
      {"huge", good + std::string(std::size_t{1} << 20, ' ')},
  };
  for (const auto& [what, content] : cases) {
    write(file, content);
    const Lookup found = lookup(dir_, d.fingerprint, d.request);
    EXPECT_EQ(found.kind, Lookup::Kind::kCorrupt) << what;
    const std::string line = describe(found);
    EXPECT_EQ(line.rfind("cache entry unreadable: ", 0), 0u) << what << ": " << line;
    EXPECT_EQ(line.find('\n'), std::string::npos) << what << ": " << line;
    EXPECT_FALSE(found.entry) << what;
    EXPECT_FALSE(save(dir_, d)) << what << ": a corrupt entry is replaced";
    EXPECT_EQ(lookup(dir_, d.fingerprint, d.request).kind, Lookup::Kind::kHit) << what;
  }
  fs::remove(dir_ / file);
  fs::create_directory(dir_ / file);
  const Lookup dir_entry = lookup(dir_, d.fingerprint, d.request);
  EXPECT_EQ(dir_entry.kind, Lookup::Kind::kCorrupt);
  std::optional<std::string> warning;
  EXPECT_NO_THROW(warning = save(dir_, d));
  ASSERT_TRUE(warning) << "a directory in place of the file cannot be replaced";
  EXPECT_EQ(warning->find('\n'), std::string::npos) << *warning;
}

TEST_F(TuneCache, UnwritableFolderIsAWarning) {
  const DeviceTune d = sample_device();
  write("a-file", "x");
  std::optional<std::string> warning;
  EXPECT_NO_THROW(warning = save(dir_ / "a-file" / "tune", d));
  ASSERT_TRUE(warning) << "a folder under a file cannot be made";
  EXPECT_NE(warning->find("cannot create the tune cache folder"), std::string::npos) << *warning;
  if (::geteuid() == 0) GTEST_SKIP() << "running as root: permissions do not stop root's writes";
  fs::create_directory(dir_ / "ro");
  fs::permissions(dir_ / "ro", fs::perms::owner_read | fs::perms::owner_exec);
  EXPECT_NO_THROW(warning = save(dir_ / "ro", d));
  ASSERT_TRUE(warning);
  EXPECT_NE(warning->find("Permission denied"), std::string::npos) << *warning;
  EXPECT_EQ(warning->find('\n'), std::string::npos);
  EXPECT_EQ(lookup(dir_ / "ro", d.fingerprint, d.request).kind, Lookup::Kind::kMissing);
}

TEST_F(TuneCache, ListedEntriesAndWarnings) {
  EXPECT_TRUE(list_cached(dir_ / "none").entries.empty());
  EXPECT_TRUE(list_cached(dir_ / "none").warnings.empty());
  ASSERT_FALSE(save(dir_, sample_device("GPU-b")));
  ASSERT_FALSE(save(dir_, sample_device("GPU-a")));
  write("GPU-c.json", "{");
  write("GPU-d.json", entry_text(sample_device("GPU-a")));  // renamed by hand
  write(".GPU-e.json.gpuvs-tmp.1.0123456789abcdef", "{");   // an interrupted write
  write("notes.txt", "not an entry");
  const CachedEntries listed = list_cached(dir_);
  ASSERT_EQ(listed.entries.size(), 2u);
  EXPECT_EQ(listed.entries[0].fingerprint.uuid, "GPU-a");
  EXPECT_EQ(listed.entries[1].fingerprint.uuid, "GPU-b");
  ASSERT_EQ(listed.warnings.size(), 2u);
  EXPECT_NE(listed.warnings[0].find("GPU-c.json"), std::string::npos) << listed.warnings[0];
  EXPECT_NE(listed.warnings[1].find("not of \"GPU-d\""), std::string::npos) << listed.warnings[1];
}

}  // namespace
