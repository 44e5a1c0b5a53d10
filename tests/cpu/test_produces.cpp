// The table of what gpuvs produces (suite/produces.h): every id a family can take is
// its own, every family has a writer, every benchmark row is well formed and has one
// entry point in its group's folder, the models' names match models/config, every
// result of the bundled and reference run files has a row, and every metric of the
// vocabulary points at ids of the table.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "models/config.h"
#include "specs/metrics.h"
#include "suite/bench_index.h"
#include "suite/produces.h"

namespace gpuvs {
namespace {

TEST(Produces, EveryIdOfAFamilyMatchesThatFamilyAndNoOther) {
  size_t checked = 0;
  for (const FamilyDef& def : families()) {
    for (std::string id : expand_family(def)) {
      // An open placeholder stands for a layer name of several dotted words.
      if (const size_t open = id.find('{'); open != std::string::npos)
        id = id.substr(0, open) + "fwd.layer1.0.conv1";
      const std::optional<IdMatch> m = match_result_id(id);
      ASSERT_TRUE(m) << id;
      EXPECT_EQ(m->family, &def) << id << " matched " << m->family->pattern << ", not "
                                 << def.pattern;
      ++checked;
    }
  }
  EXPECT_GT(checked, 200u);
}

TEST(Produces, NoIdIsHeldByTwoFamilies) {
  std::map<std::string, std::string> owner;
  for (const FamilyDef& def : families())
    for (const std::string& id : expand_family(def)) {
      const auto [it, fresh] = owner.emplace(id, std::string(def.pattern));
      EXPECT_TRUE(fresh) << id << " is in " << it->second << " and " << def.pattern;
    }
}

TEST(Produces, ResultIdFillsThePatternAndRefusesValuesOutsideTheTable) {
  EXPECT_EQ(result_id(Family::kHbmStream, {"copy"}), "memory.hbm.copy");
  EXPECT_EQ(result_id(Family::kModelRate, {"bert-large", "train", "fp8"}),
            "model.bert-large.train.fp8");
  EXPECT_EQ(result_id(Family::kModelLayer, {"resnet50", "train", "bf16", "fwd.layer1.0.conv1"}),
            "model.resnet50.train.bf16.layer.fwd.layer1.0.conv1");
  EXPECT_EQ(result_id(Family::kRooflineRidge, {"gemm.bf16"}), "roofline.gemm.bf16.ridge");
  EXPECT_THROW(result_id(Family::kHbmStream, {"copyy"}), std::logic_error);
  EXPECT_THROW(result_id(Family::kHbmStream, {}), std::logic_error);
  EXPECT_THROW(result_id(Family::kL2Read, {"x"}), std::logic_error);
  EXPECT_THROW(result_id(Family::kModelRate, {"bert_large", "train", "bf16"}), std::logic_error);
  EXPECT_THROW(result_id(Family::kModelLayer, {"resnet50", "train", "bf16", "a..b"}),
               std::logic_error);
}

TEST(Produces, MatchGivesTheFamilyAndItsValues) {
  const auto m = match_result_id("model.bert-large.infer.bf16.energy_per_item");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->family->family, Family::kModelEnergy);
  EXPECT_EQ(m->value("model"), "bert-large");
  EXPECT_EQ(m->value("mode"), "infer");
  EXPECT_EQ(m->value("precision"), "bf16");
  EXPECT_EQ(m->value("nothing"), "");
  EXPECT_EQ(family_unit(*m->family, m->values), "J/seq");
  const auto g = match_result_id("compute.gemm.int8.best");
  ASSERT_TRUE(g);
  EXPECT_EQ(family_unit(*g->family, g->values), "OP/s");
  EXPECT_FALSE(match_result_id("model.bert_large.train.bf16"));
  EXPECT_FALSE(match_result_id("memory.hbm"));
  EXPECT_FALSE(match_result_id("memory.hbm.copy."));
  EXPECT_FALSE(match_result_id(""));
}

// Lower-case words joined by dots: the shape of every benchmark name and result id.
bool dotted_words(std::string_view s, std::string_view extra = "") {
  if (s.empty() || s.front() == '.' || s.back() == '.') return false;
  if (s.find("..") != std::string_view::npos) return false;
  return std::all_of(s.begin(), s.end(), [&](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
           extra.find(c) != std::string_view::npos;
  });
}

// Every row of the table of benchmarks: a unique name "group.word" of its group, a
// one-line summary, a scope, the families it writes (each once), and every group
// represented in `gpuvs run` (else a whole section of the report never fills).
TEST(Produces, EveryBenchmarkRowIsWellFormed) {
  std::set<std::string_view> names;
  std::map<std::string_view, bool> group_in_run;
  for (const BenchmarkDef& b : benchmark_defs()) {
    SCOPED_TRACE(std::string(b.name));
    EXPECT_TRUE(names.insert(b.name).second) << "named twice";
    EXPECT_TRUE(dotted_words(b.name)) << "not lower-case dotted words";
    EXPECT_EQ(std::count(b.name.begin(), b.name.end(), '.'), 1) << "not group.word";
    EXPECT_EQ(b.name.substr(0, b.name.find('.')), b.group);
    EXPECT_FALSE(b.summary.empty());
    EXPECT_EQ(b.summary.find('\n'), std::string_view::npos) << "--list shows one line";
    EXPECT_TRUE(b.scope == BenchScope::kPerDevice || b.scope == BenchScope::kAllDevices);
    EXPECT_FALSE(b.writes.empty());
    std::set<Family> seen;
    for (Family f : b.writes) {
      ASSERT_LT(static_cast<size_t>(f), families().size());
      EXPECT_TRUE(seen.insert(f).second) << "writes " << family_def(f).pattern << " twice";
    }
    group_in_run[b.group] = group_in_run[b.group] || b.in_run;
  }
  for (const auto& [group, in_run] : group_in_run)
    EXPECT_TRUE(in_run) << "no benchmark of group " << group << " is in gpuvs run";
  EXPECT_TRUE(find_benchmark_def("memory.hbm"));
  EXPECT_FALSE(find_benchmark_def("memory"));
}

TEST(Produces, EveryFamilyHasAWriterAndWellFormedIds) {
  std::set<Family> written;
  for (const BenchmarkDef& b : benchmark_defs())
    written.insert(b.writes.begin(), b.writes.end());
  for (const ImporterDef& i : importer_defs())
    written.insert(i.writes.begin(), i.writes.end());
  for (size_t i = 0; i < families().size(); ++i) {
    const FamilyDef& def = families()[i];
    SCOPED_TRACE(std::string(def.pattern));
    // family_def() indexes the table by the enum.
    EXPECT_EQ(static_cast<size_t>(def.family), i);
    EXPECT_TRUE(written.count(def.family)) << "no benchmark or importer writes it";
    EXPECT_FALSE(def.what.empty());
    for (std::string id : expand_family(def)) {
      if (const size_t open = id.find('{'); open != std::string::npos)
        id = id.substr(0, open) + "layer";
      EXPECT_TRUE(dotted_words(id, "-")) << id;
    }
  }
  EXPECT_EQ(families().size(), static_cast<size_t>(Family::kCount));
}

// Another tool's figures of a gpuvs definition (nccl-tests', nvbandwidth's) carry that
// family's id with a suffix, its unit, its configuration and placeholders whose values
// are the family's, so that compare can put them in its rows.
TEST(Produces, EveryTwinSharesItsFamilysDefinition) {
  size_t twins = 0;
  for (const FamilyDef& def : families()) {
    if (!def.twin_of) continue;
    SCOPED_TRACE(std::string(def.pattern));
    ++twins;
    const FamilyDef& own = family_def(*def.twin_of);
    EXPECT_TRUE(own.tool.empty()) << "a twin of another tool's family";
    EXPECT_FALSE(def.tool.empty()) << "a twin names the tool that measured it";
    EXPECT_TRUE(def.pattern.starts_with(std::string(own.pattern) + "."));
    EXPECT_EQ(def.pattern.find('.', own.pattern.size() + 1), std::string_view::npos)
        << "one suffix word";
    EXPECT_EQ(def.unit, own.unit);
    ASSERT_EQ(def.config.size(), own.config.size());
    for (size_t k = 0; k < def.config.size(); ++k) {
      EXPECT_EQ(def.config[k].name, own.config[k].name);
      EXPECT_EQ(def.config[k].fallback, own.config[k].fallback);
    }
    ASSERT_EQ(def.placeholders.size(), own.placeholders.size());
    for (size_t k = 0; k < def.placeholders.size(); ++k) {
      EXPECT_EQ(def.placeholders[k].name, own.placeholders[k].name);
      for (const PlaceholderValue& v : def.placeholders[k].values)
        EXPECT_TRUE(std::any_of(own.placeholders[k].values.begin(),
                                own.placeholders[k].values.end(),
                                [&](const PlaceholderValue& o) { return o.text == v.text; }))
            << v.text << " is not a value of " << own.pattern;
    }
  }
  EXPECT_EQ(twins, 5u);
  using V = std::vector<std::string>;
  EXPECT_EQ(tool_twin_ids("collective.all_reduce.busbw"),
            V{"collective.all_reduce.busbw.nccl_tests"});
  EXPECT_EQ(tool_twin_ids("host.h2d.pinned"), V{"host.h2d.pinned.nvbandwidth"});
  EXPECT_EQ(tool_twin_ids("peer.ce.bidirectional"), V{"peer.ce.bidirectional.nvbandwidth"});
  EXPECT_EQ(tool_twin_ids("peer.latency"), V{"peer.latency.nvbandwidth"});
  // No tool measures these by gpuvs's definition.
  EXPECT_EQ(tool_twin_ids("host.bidirectional.pinned"), V{});
  EXPECT_EQ(tool_twin_ids("host.h2d.pageable"), V{});
  EXPECT_EQ(tool_twin_ids("memory.hbm.copy"), V{});
  EXPECT_EQ(tool_twin_ids("no.such.id"), V{});
}

// Every family another tool measured is written by that tool's importer (nccl-tests'
// also by the benchmark that runs it beside gpuvs), and importers write only those.
TEST(Produces, EveryToolFamilyHasItsImporter) {
  for (const FamilyDef& def : families()) {
    if (def.tool.empty()) continue;
    const ImporterDef* importer = find_importer_def(def.tool);
    ASSERT_TRUE(importer) << def.pattern << ": no importer of " << def.tool;
    EXPECT_NE(std::find(importer->writes.begin(), importer->writes.end(), def.family),
              importer->writes.end())
        << def.pattern << " is not written by gpuvs import " << def.tool;
  }
  for (const ImporterDef& i : importer_defs()) {
    EXPECT_FALSE(i.reads.empty());
    for (Family f : i.writes)
      EXPECT_EQ(family_def(f).tool, i.tool) << family_def(f).pattern;
  }
  EXPECT_TRUE(find_importer_def("nvbench"));
  EXPECT_FALSE(find_importer_def("nvbench2"));
}

// The registrations in the sources (GPUVS_BENCHMARK lines, read at build time, so this
// holds in the CPU build too, which compiles no bench/): each row has exactly one, in
// the folder of its group, and no registration lacks a row.
TEST(Produces, EveryBenchmarkHasOneEntryPointInItsGroupsFolder) {
  const std::span<const ScannedEntry> scanned = scanned_entries();
  ASSERT_FALSE(scanned.empty());
  std::string problems;
  for (const std::string& p : entry_point_problems(benchmark_defs(), entry_points_of(scanned)))
    problems += "\n  " + p;
  EXPECT_TRUE(problems.empty()) << problems;
  for (const ScannedEntry& e : scanned) {
    // Host logic lives in .cpp files; .cu files hold kernels (docs/design.md).
    EXPECT_TRUE(e.source.ends_with(".cpp")) << e.name << " registered in " << e.source;
    EXPECT_TRUE(e.function.starts_with("run_")) << e.function << " in " << e.source;
  }
}

// The one problem `entries` has against a small table, "" when none or several.
std::string one_problem(std::vector<EntryPoint> entries) {
  using F = Family;
  const std::vector<BenchmarkDef> table = {
      {"memory.hbm", "memory", "HBM", true, BenchScope::kPerDevice, {F::kHbmStream}},
      {"memory.cache", "memory", "L2", true, BenchScope::kPerDevice, {F::kL2Read}},
      {"model.end_to_end", "model", "models", true, BenchScope::kPerDevice, {F::kModelRate}}};
  const std::vector<std::string> problems = entry_point_problems(table, entries);
  EXPECT_LE(problems.size(), 1u);
  return problems.size() == 1 ? problems[0] : std::string();
}

TEST(Produces, EntryPointProblemsNameTheBenchmarkAndItsFiles) {
  const std::vector<EntryPoint> good = {{"memory.hbm", "bench/memory/hbm.cpp"},
                                        {"memory.cache", "bench/memory/cache.cpp"},
                                        {"model.end_to_end", "suite/registry.cpp"}};
  EXPECT_EQ(one_problem(good), "");
  auto with = [&](EntryPoint extra) {
    std::vector<EntryPoint> v = good;
    v.push_back(extra);
    return one_problem(v);
  };
  const std::string twice = with({"memory.hbm", "bench/memory/hbm_copy.cpp"});
  EXPECT_NE(twice.find("memory.hbm is registered twice"), std::string::npos) << twice;
  EXPECT_NE(twice.find("bench/memory/hbm.cpp and in bench/memory/hbm_copy.cpp"), std::string::npos)
      << twice;
  const std::string no_row = with({"memory.tlb", "bench/memory/tlb.cpp"});
  EXPECT_NE(no_row.find("bench/memory/tlb.cpp registers benchmark memory.tlb, which the table"),
            std::string::npos)
      << no_row;
  const std::string missing = one_problem({good[0], good[2]});
  EXPECT_NE(missing.find("memory.cache of the table"), std::string::npos) << missing;
  EXPECT_NE(missing.find("no entry point"), std::string::npos) << missing;
  EXPECT_NE(missing.find("src/bench/memory/"), std::string::npos) << missing;
  const std::string folder =
      one_problem({good[0], {"memory.cache", "bench/compute/cache.cpp"}, good[2]});
  EXPECT_NE(folder.find("its group is memory"), std::string::npos) << folder;
  const std::string outside =
      one_problem({good[0], {"memory.cache", "suite/registry.cpp"}, good[2]});
  EXPECT_NE(outside.find("outside src/bench/"), std::string::npos) << outside;
}

// The table's model placeholders are the names models/config parses: neither can
// drift without this failing.
TEST(Produces, ModelPlaceholdersAreTheModelsNames) {
  const FamilyDef& rate = family_def(Family::kModelRate);
  std::map<std::string_view, std::set<std::string>> values;
  for (const Placeholder& p : rate.placeholders)
    for (const PlaceholderValue& v : p.values)
      values[p.name].insert(std::string(v.text));
  std::set<std::string> precisions, modes, models;
  for (auto p : {models::Precision::kFp32, models::Precision::kTf32, models::Precision::kFp16,
                 models::Precision::kBf16, models::Precision::kFp8})
    precisions.insert(std::string(models::to_string(p)));
  for (auto m : {models::Mode::kTrain, models::Mode::kInfer})
    modes.insert(std::string(models::to_string(m)));
  for (const ModelDef& m : model_defs())
    models.insert(std::string(m.id));
  EXPECT_EQ(values["precision"], precisions);
  EXPECT_EQ(values["mode"], modes);
  EXPECT_EQ(values["model"], models);
  for (const std::string& p : precisions)
    EXPECT_TRUE(models::precision_from_string(p)) << p;
  EXPECT_STREQ(std::string(find_model_def("bert-large")->item).c_str(), "seq");
}

std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Every result gpuvs wrote into the committed run files (the bundled reference and
// the evidence beside it) has a row, and an ok result has the row's unit. (The run
// files of tests/data are hand-written for the schema's tests, not gpuvs's output.)
TEST(Produces, EveryResultOfTheReferenceRunsHasARow) {
  size_t results = 0;
  for (const char* dir : {"data/reference"}) {
    const std::filesystem::path root = std::filesystem::path(GPUVS_SOURCE_DIR) / dir;
    if (!std::filesystem::exists(root)) continue;
    for (const auto& entry : std::filesystem::directory_iterator(root)) {
      if (entry.path().extension() != ".json") continue;
      nlohmann::json doc;
      try {
        doc = nlohmann::json::parse(read_text(entry.path()));
      } catch (const std::exception&) {
        continue;  // a deliberately malformed test file
      }
      if (!doc.is_object() || doc.value("schema", "") != "gpuvs.run/1" ||
          !doc["results"].is_array())
        continue;
      for (const auto& r : doc["results"]) {
        const std::string id = r.value("id", "");
        const auto m = match_result_id(id);
        ASSERT_TRUE(m) << entry.path().filename() << ": " << id << " has no row";
        if (r.value("status", "") == "ok") {
          EXPECT_EQ(r.value("unit", ""), family_unit(*m->family, m->values))
              << entry.path().filename() << ": " << id;
        }
        ++results;
      }
    }
  }
  EXPECT_GT(results, 1000u);
}

// Every family a benchmark or `gpuvs import` writes is answered by a metric of the
// vocabulary (what compare, claims and the headline read), unless it is listed here as
// a figure shown only as a result of its own: sweeps and studies, figures no datasheet
// or published source gives, and records. Both ways, so that neither a new family nor a
// new metric slips by without deciding whether it is compared.
TEST(Produces, EveryWrittenFamilyIsAnsweredByAMetricOrListedAsNotCompared) {
  using F = Family;
  const std::set<Family> not_compared = {
      // Sweeps and what they derive: the report charts them.
      F::kL2Read, F::kSmemRead, F::kReadSweep, F::kLatency, F::kRoofline, F::kRooflineRidge,
      // Capacity: memory.size compares the datasheets, not what an allocation gets.
      F::kLargestAllocation, F::kTotalAllocatable,
      // The GEMM metrics read burst figures; sustained ones are shown beside them.
      F::kGemmSustained,
      // Zero-copy: no datasheet or published source gives it.
      F::kZeroCopy, F::kZeroCopySparse,
      // One GPU: a reason, not a figure.
      F::kPeerLink,
      // Derived from the rate, and the per-layer profile.
      F::kModelFlops, F::kModelLayers, F::kModelLayer};
  std::vector<std::pair<std::string, std::vector<Family>>> writers;
  for (const BenchmarkDef& b : benchmark_defs())
    writers.emplace_back(std::string(b.name), b.writes);
  for (const ImporterDef& i : importer_defs())
    writers.emplace_back("gpuvs import " + std::string(i.tool), i.writes);
  for (const auto& [name, writes] : writers) {
    for (Family f : writes) {
      const FamilyDef& def = family_def(f);
      std::string answered;
      for (const std::string& id : expand_family(def))
        if (const MetricDef* m = metric_for_result(id)) answered = m->id;
      if (not_compared.count(f)) {
        EXPECT_EQ(answered, "") << name << ": " << def.pattern << " answers metric " << answered
                                << " but is listed as not compared";
      } else {
        EXPECT_NE(answered, "") << name << ": " << def.pattern
                                << " answers no metric of specs/metrics.cpp";
      }
    }
  }
}

TEST(Produces, EveryMetricPointsAtIdsOfTheTable) {
  size_t ids = 0;
  for (const MetricDef& metric : metrics()) {
    std::vector<std::string> all = metric.result_ids;
    all.insert(all.end(), metric.tool_result_ids.begin(), metric.tool_result_ids.end());
    for (const std::string& id : all) {
      const auto m = match_result_id(id);
      ASSERT_TRUE(m) << metric.id << " names " << id << ", which no family holds";
      EXPECT_EQ(family_unit(*m->family, m->values), metric.unit) << metric.id << ": " << id;
      ++ids;
    }
  }
  EXPECT_GT(ids, 20u);
  // Another tool's figure of a gpuvs definition answers gpuvs's metric, after its own.
  const MetricDef* nvlink = find_metric("link.nvlink");
  ASSERT_TRUE(nvlink);
  EXPECT_EQ(nvlink->tool_result_ids, std::vector<std::string>{"peer.ce.bidirectional.nvbandwidth"});
  EXPECT_EQ(metric_for_result("collective.all_reduce.busbw.nccl_tests")->id,
            "collective.all_reduce_busbw");
  EXPECT_EQ(metric_for_result("nvbench.gpu_time")->id, "nvbench.gpu_time");
  EXPECT_EQ(metric_for_result("nvbandwidth.device_local_copy")->id,
            "nvbandwidth.device_local_copy");
}

}  // namespace
}  // namespace gpuvs
