// Malformed catalogue and published-figure files: every one is refused with a
// one-line UsageError (exit code 2) naming the file and the field, never a crash,
// a silent default or a figure of 0. Files come from users (--catalogue), so the
// loader must hold against anything.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "core/error.h"
#include "specs/catalogue.h"
#include "specs/published.h"
#include "usage_error.h"

namespace gpuvs {
namespace {

using ojson = nlohmann::ordered_json;

ojson valid_catalogue() {
  const ojson gpu = {{"id", "TEST-GPU"},
                     {"name", "Test GPU"},
                     {"aliases", {"TG"}},
                     {"driver_names", {"NVIDIA Test"}},
                     {"pci_device_ids", {"0x1234"}},
                     {"architecture", "Test"},
                     {"form_factor", "PCIe"},
                     {"memory_type", "HBM3"},
                     {"tensor_core_generation", 4},
                     {"pcie_generation", 5},
                     {"nvlink_generation", nullptr},
                     {"source", "https://example.com/datasheet"},
                     {"figures",
                      {{"memory.size", {{"value", 80}, {"unit", "GB"}}},
                       {"compute.fp16", {{"value", 312}, {"unit", "TFLOP/s"}, {"note", "dense"}}},
                       {"compute.fp8", nullptr}}}};
  ojson second = gpu;
  second["id"] = "OTHER-GPU";
  second["aliases"] = {"OG"};
  return {{"schema", "gpuvs.catalogue/1"}, {"gpus", {gpu, second}}};
}

ojson valid_published() {
  return {{"schema", "gpuvs.published/1"},
          {"figures",
           {{{"gpu", "H200-SXM"},
             {"metric", "model.resnet50.infer"},
             {"value", 94620},
             {"unit", "img/s"},
             {"precision", "int8"},
             {"setting", "per GPU = system result / 8"},
             {"source", "https://example.com/result"},
             {"publisher", "MLPerf"},
             {"date", "2024-08-28"}}}}};
}

const auto error_of = gpuvs_test::usage_error_of;

struct Case {
  const char* name;
  std::function<void(ojson&)> mutate;
  const char* field;    // the field path the message must name
  const char* problem;  // a part of the problem it must state
};

class MalformedCatalogue : public testing::TestWithParam<Case> {};

TEST_P(MalformedCatalogue, IsOneLineUsageErrorNamingFileAndField) {
  ojson doc = valid_catalogue();
  GetParam().mutate(doc);
  const std::string text = doc.dump();
  const std::string msg = error_of([&] { Catalogue::parse(text, "bad-catalogue.json"); });
  EXPECT_EQ(msg.rfind("bad-catalogue.json: ", 0), 0u) << msg;
  EXPECT_NE(msg.find(GetParam().field), std::string::npos) << msg;
  EXPECT_NE(msg.find(GetParam().problem), std::string::npos) << msg;
}

const Case kCatalogueCases[] = {
    {"WrongSchema", [](ojson& d) { d["schema"] = "gpuvs.catalogue/2"; }, "schema",
     "expected \"gpuvs.catalogue/1\""},
    {"SchemaNotString", [](ojson& d) { d["schema"] = 1; }, "schema", "a number"},
    {"NoGpus", [](ojson& d) { d.erase("gpus"); }, "gpus", "missing"},
    {"GpusNotArray", [](ojson& d) { d["gpus"] = "all"; }, "gpus", "non-empty array"},
    {"EmptyGpus", [](ojson& d) { d["gpus"] = ojson::array(); }, "gpus", "non-empty array"},
    {"GpuNotObject", [](ojson& d) { d["gpus"][1] = 7; }, "gpus[1]", "expected an object"},
    {"MissingId", [](ojson& d) { d["gpus"][0].erase("id"); }, "gpus[0].id", "missing"},
    {"IdNotString", [](ojson& d) { d["gpus"][0]["id"] = 5; }, "gpus[0].id", "expected a string"},
    {"IdEmpty", [](ojson& d) { d["gpus"][0]["id"] = ""; }, "gpus[0].id", "must not be empty"},
    {"IdWithSpaces", [](ojson& d) { d["gpus"][0]["id"] = "TEST GPU"; }, "gpus[0].id",
     "is not an id"},
    {"MissingName", [](ojson& d) { d["gpus"][1].erase("name"); }, "gpus[1].name", "missing"},
    {"AliasNotString",
     [](ojson& d) {
       d["gpus"][0]["aliases"] = {"ok", 3};
     },
     "gpus[0].aliases[1]", "expected a string"},
    {"UnknownField", [](ojson& d) { d["gpus"][0]["colour"] = "green"; }, "gpus[0].colour",
     "unknown field"},
    {"UnknownMetric",
     [](ojson& d) {
       d["gpus"][0]["figures"]["compute.fp17"] = {{"value", 1}, {"unit", "TFLOP/s"}};
     },
     "gpus[0].figures[\"compute.fp17\"]", "unknown metric id"},
    {"UnitDoesNotFitMetric",
     [](ojson& d) { d["gpus"][0]["figures"]["compute.fp16"]["unit"] = "GB/s"; },
     "gpus[0].figures[\"compute.fp16\"].unit", "does not fit compute.fp16"},
    {"UnitMissing", [](ojson& d) { d["gpus"][0]["figures"]["compute.fp16"].erase("unit"); },
     "gpus[0].figures[\"compute.fp16\"].unit", "missing"},
    {"NegativeValue", [](ojson& d) { d["gpus"][0]["figures"]["memory.size"]["value"] = -80; },
     "gpus[0].figures[\"memory.size\"].value", "not positive"},
    {"ZeroValue", [](ojson& d) { d["gpus"][1]["figures"]["compute.fp16"]["value"] = 0; },
     "gpus[1].figures[\"compute.fp16\"].value", "not positive"},
    {"ValueNotNumber", [](ojson& d) { d["gpus"][0]["figures"]["compute.fp16"]["value"] = "312"; },
     "gpus[0].figures[\"compute.fp16\"].value", "expected a number"},
    {"ValueOverflowsOnConversion",
     [](ojson& d) { d["gpus"][0]["figures"]["compute.fp16"]["value"] = 1e300; },
     "gpus[0].figures[\"compute.fp16\"].value", "too large"},
    {"FigureNotObject", [](ojson& d) { d["gpus"][0]["figures"]["memory.size"] = 80; },
     "gpus[0].figures[\"memory.size\"]", "expected an object"},
    {"FiguresMissing", [](ojson& d) { d["gpus"][0].erase("figures"); }, "gpus[0].figures",
     "missing"},
    {"DuplicateId", [](ojson& d) { d["gpus"][1]["id"] = "test-gpu"; }, "gpus[1].id",
     "already a name of \"TEST-GPU\""},
    // Two entries with one id: find() and `specs show` would only ever see the first.
    {"SameIdTwice", [](ojson& d) { d["gpus"][1]["id"] = "TEST-GPU"; }, "gpus[1].id",
     "already a name of \"TEST-GPU\" (gpus[0]"},
    {"SameIdTwiceAfterAnother",
     [](ojson& d) {
       ojson third = d["gpus"][0];
       third["aliases"] = {"T3"};
       d["gpus"].push_back(third);
     },
     "gpus[2].id", "already a name of \"TEST-GPU\" (gpus[0]"},
    {"SubnormalValue", [](ojson& d) { d["gpus"][0]["figures"]["compute.fp16"]["value"] = 1e-320; },
     "gpus[0].figures[\"compute.fp16\"].value", "is not a possible compute rate (FLOP/s)"},
    {"TinyValue", [](ojson& d) { d["gpus"][0]["figures"]["compute.fp16"]["value"] = 1e-15; },
     "gpus[0].figures[\"compute.fp16\"].value", "once converted from TFLOP/s"},
    {"ImpossibleSize", [](ojson& d) { d["gpus"][0]["figures"]["memory.size"]["value"] = 1e9; },
     "gpus[0].figures[\"memory.size\"].value", "1e+18 is not a possible size (B)"},
    {"DuplicateAlias", [](ojson& d) { d["gpus"][1]["aliases"] = {"T_G"}; }, "gpus[1].aliases[0]",
     "already a name of \"TEST-GPU\""},
    {"AliasEqualsOtherId", [](ojson& d) { d["gpus"][1]["aliases"] = {"Test GPU"}; },
     "gpus[1].aliases[0]", "already a name"},
    {"PciIdNotHex", [](ojson& d) { d["gpus"][0]["pci_device_ids"] = {"0x23G5"}; },
     "gpus[0].pci_device_ids[0]", "not a hex PCI device id"},
    {"PciIdWithoutPrefix", [](ojson& d) { d["gpus"][0]["pci_device_ids"] = {"2335"}; },
     "gpus[0].pci_device_ids[0]", "not a hex PCI device id"},
    {"PciIdTooLong", [](ojson& d) { d["gpus"][0]["pci_device_ids"] = {"0x233510DE"}; },
     "gpus[0].pci_device_ids[0]", "not a hex PCI device id"},
    {"SourceNotUrl", [](ojson& d) { d["gpus"][0]["source"] = "the datasheet"; }, "gpus[0].source",
     "not an http(s) URL"},
    {"SourceMissing", [](ojson& d) { d["gpus"][1].erase("source"); }, "gpus[1].source", "missing"},
    {"FigureSourceNotUrl",
     [](ojson& d) { d["gpus"][0]["figures"]["memory.size"]["source"] = "ftp://x"; },
     "gpus[0].figures[\"memory.size\"].source", "not an http(s) URL"},
    {"GenerationNotInteger", [](ojson& d) { d["gpus"][0]["tensor_core_generation"] = "4th"; },
     "gpus[0].tensor_core_generation", "expected an integer"},
    {"GenerationOutOfRange", [](ojson& d) { d["gpus"][0]["pcie_generation"] = 0; },
     "gpus[0].pcie_generation", "out of range"},
};

INSTANTIATE_TEST_SUITE_P(Cases, MalformedCatalogue, testing::ValuesIn(kCatalogueCases),
                         [](const testing::TestParamInfo<Case>& info) { return info.param.name; });

TEST(MalformedCatalogueText, SyntaxErrorsNameTheByte) {
  for (const char* text : {"", "{", "{\"schema\": \"gpuvs.catalogue/1\",}", "NaN", "[1, 2"}) {
    const std::string msg = error_of([&] { Catalogue::parse(text, "syntax.json"); });
    EXPECT_EQ(msg.rfind("syntax.json: not valid JSON at byte ", 0), 0u) << text << ": " << msg;
  }
}

// Found by fuzz_loaders: nlohmann reports a number beyond a double's range as an
// out_of_range error, which once escaped the loader.
TEST(MalformedCatalogueText, NumberBeyondADoubleIsOneLineError) {
  const std::string text = "{\"schema\": " + std::string(400, '7') + "}";
  const std::string msg = error_of([&] { Catalogue::parse(text, "huge.json"); });
  EXPECT_EQ(msg.rfind("huge.json: not valid JSON: number overflow", 0), 0u) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos);
}

TEST(MalformedCatalogueText, TopLevelMustBeAnObjectWithASchema) {
  EXPECT_NE(
      error_of([] { Catalogue::parse("[]", "a.json"); }).find("a.json: not a gpuvs catalogue"),
      std::string::npos);
  EXPECT_NE(error_of([] { Catalogue::parse("{}", "a.json"); }).find("no \"schema\" field"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              Catalogue::parse(R"({"schema":"gpuvs.run/1"})", "a.json");
            }).find("a.json: schema: "),
            std::string::npos);
}

TEST(MalformedCatalogueText, DuplicateKeysAreRefusedWithTheirPath) {
  const std::string text = R"({"schema": "gpuvs.catalogue/1", "gpus": [{"id": "A", "id": "B"}]})";
  const std::string msg = error_of([&] { Catalogue::parse(text, "dup.json"); });
  EXPECT_EQ(msg.rfind("dup.json: gpus[0].id: duplicate key", 0), 0u) << msg;
}

TEST(MalformedCatalogueText, DeepNestingIsRefusedWithoutRecursion) {
  std::string text = R"({"schema": "gpuvs.catalogue/1", "gpus": )";
  text += std::string(100000, '[') + std::string(100000, ']') + "}";
  const std::string msg = error_of([&] { Catalogue::parse(text, "deep.json"); });
  EXPECT_EQ(msg.rfind("deep.json: gpus", 0), 0u) << msg.substr(0, 200);
  EXPECT_NE(msg.find("nested deeper than 32 levels"), std::string::npos) << msg.substr(0, 200);
}

TEST(MalformedCatalogueText, ControlCharactersInKeysStayOnOneLine) {
  ojson doc = valid_catalogue();
  doc["gpus"][0]["figures"]["bad\nmetric"] = {{"value", 1}, {"unit", "W"}};
  const std::string msg = error_of([&] { Catalogue::parse(doc.dump(), "ctl.json"); });
  EXPECT_NE(msg.find("\\n"), std::string::npos) << msg;
}

TEST(MalformedCatalogueFile, UnreadableFileIsAUsageError) {
  const std::string msg = error_of([] { Catalogue::load("/nonexistent/gpuvs/catalogue.json"); });
  EXPECT_EQ(msg.rfind("/nonexistent/gpuvs/catalogue.json: cannot read", 0), 0u) << msg;
  const auto dir = std::filesystem::temp_directory_path();
  EXPECT_NE(error_of([&] { Catalogue::load(dir); }).find("cannot read"), std::string::npos);
}

TEST(MalformedCatalogueFile, DevicesAndLargeFilesAreRefusedBeforeReading) {
  EXPECT_EQ(error_of([] { Catalogue::load("/dev/zero"); }),
            "/dev/zero: cannot read: it is a character device, not a file (give a catalogue)");
  const auto path = std::filesystem::temp_directory_path() /
                    ("gpuvs_catalogue_big_" + std::to_string(::getpid()) + ".json");
  std::ofstream(path) << std::string((std::size_t{16} << 20) + 1, ' ');
  const std::string msg = error_of([&] { Catalogue::load(path); });
  std::filesystem::remove(path);
  EXPECT_EQ(msg, path.string() + ": file is larger than 16 MiB, the limit for a catalogue");
}

TEST(MalformedCatalogueFile, LoadReadsAValidFile) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("gpuvs_catalogue_" + std::to_string(::getpid()) + ".json");
  std::ofstream(path) << valid_catalogue().dump(2);
  const Catalogue c = Catalogue::load(path);
  std::filesystem::remove(path);
  ASSERT_EQ(c.gpus().size(), 2u);
  EXPECT_DOUBLE_EQ(c.get("tg").figures.at("compute.fp16").value, 312e12);
  EXPECT_EQ(c.get("TG").figures.at("compute.fp16").source, "https://example.com/datasheet");
  EXPECT_EQ(c.get("TG").unsupported, std::vector<std::string>{"compute.fp8"});
}

class MalformedPublished : public testing::TestWithParam<Case> {};

TEST_P(MalformedPublished, IsOneLineUsageErrorNamingFileAndField) {
  ojson doc = valid_published();
  GetParam().mutate(doc);
  const std::string text = doc.dump();
  const std::string msg = error_of([&] { Published::parse(text, "bad-published.json"); });
  EXPECT_EQ(msg.rfind("bad-published.json: ", 0), 0u) << msg;
  EXPECT_NE(msg.find(GetParam().field), std::string::npos) << msg;
  EXPECT_NE(msg.find(GetParam().problem), std::string::npos) << msg;
}

const Case kPublishedCases[] = {
    {"WrongSchema", [](ojson& d) { d["schema"] = "gpuvs.catalogue/1"; }, "schema",
     "expected \"gpuvs.published/1\""},
    {"FiguresNotArray", [](ojson& d) { d["figures"] = ojson::object(); }, "figures",
     "expected an array"},
    {"UnknownGpu", [](ojson& d) { d["figures"][0]["gpu"] = "H300"; }, "figures[0].gpu",
     "not a GPU of the catalogue (did you mean: "},
    {"UnknownMetric", [](ojson& d) { d["figures"][0]["metric"] = "model.gpt5.train"; },
     "figures[0].metric", "unknown metric id"},
    {"UnitDoesNotFit", [](ojson& d) { d["figures"][0]["unit"] = "seq/s"; }, "figures[0].unit",
     "does not fit model.resnet50.infer"},
    {"NegativeValue", [](ojson& d) { d["figures"][0]["value"] = -1; }, "figures[0].value",
     "not positive"},
    {"BadDate", [](ojson& d) { d["figures"][0]["date"] = "28/08/2024"; }, "figures[0].date",
     "not a date"},
    {"ImpossibleMonth", [](ojson& d) { d["figures"][0]["date"] = "2024-13-01"; }, "figures[0].date",
     "not a date"},
    {"MissingSource", [](ojson& d) { d["figures"][0].erase("source"); }, "figures[0].source",
     "missing"},
    {"MissingPublisher", [](ojson& d) { d["figures"][0]["publisher"] = ""; },
     "figures[0].publisher", "must not be empty"},
    {"UnknownField", [](ojson& d) { d["figures"][0]["gpus"] = 8; }, "figures[0].gpus",
     "unknown field"},
};

INSTANTIATE_TEST_SUITE_P(Cases, MalformedPublished, testing::ValuesIn(kPublishedCases),
                         [](const testing::TestParamInfo<Case>& info) { return info.param.name; });

TEST(MalformedPublishedText, CheckedAgainstTheGivenCatalogue) {
  const ojson doc = valid_published();
  ojson other = valid_catalogue();
  const Catalogue c = Catalogue::parse(other.dump(), "other.json");
  const std::string msg = error_of([&] { Published::parse(doc.dump(), "p.json", c); });
  EXPECT_NE(msg.find("p.json: figures[0].gpu: \"H200-SXM\" is not a GPU of the catalogue"),
            std::string::npos)
      << msg;
}

}  // namespace
}  // namespace gpuvs
