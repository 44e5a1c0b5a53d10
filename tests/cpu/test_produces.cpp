// The table of what gpuvs produces (suite/produces.h): every id a family can take is
// its own, every family has a writer, the models' names match models/config, every
// result of the bundled and reference run files has a row, and every metric of the
// vocabulary points at ids of the table.
#include <gtest/gtest.h>

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

TEST(Produces, EveryFamilyHasAWriterAndBenchmarkNamesAreUnique) {
  std::set<Family> written;
  std::set<std::string_view> names;
  for (const BenchmarkDef& b : benchmark_defs()) {
    EXPECT_TRUE(names.insert(b.name).second) << b.name;
    EXPECT_EQ(b.name.substr(0, b.group.size()), b.group) << b.name;
    EXPECT_FALSE(b.summary.empty()) << b.name;
    for (Family f : b.writes)
      written.insert(f);
  }
  for (const FamilyDef& def : families())
    EXPECT_TRUE(written.count(def.family)) << def.pattern << " has no benchmark";
  EXPECT_TRUE(find_benchmark_def("memory.hbm"));
  EXPECT_FALSE(find_benchmark_def("memory"));
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

TEST(Produces, EveryMetricPointsAtIdsOfTheTable) {
  size_t ids = 0;
  for (const MetricDef& metric : metrics()) {
    for (const std::string& id : metric.result_ids) {
      const auto m = match_result_id(id);
      ASSERT_TRUE(m) << metric.id << " names " << id << ", which no family holds";
      EXPECT_EQ(family_unit(*m->family, m->values), metric.unit) << metric.id << ": " << id;
      ++ids;
    }
  }
  EXPECT_GT(ids, 20u);
}

}  // namespace
}  // namespace gpuvs
