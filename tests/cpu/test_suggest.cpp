// "Did you mean": the one rule for every name a user types, with its cut-off (far
// names get no suggestion), swaps of neighbours as one edit, prefixes, and the
// ranking; then through the binary for commands, benchmarks, models and GPUs.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cli_runner.h"
#include "core/suggest.h"

namespace gpuvs {
namespace {

using Names = std::vector<std::string>;

TEST(Suggest, EditDistanceCountsASwapAsOne) {
  EXPECT_EQ(edit_distance("memoryhmb", "memoryhbm"), 1u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance("abc", "abc"), 0u);
}

TEST(Suggest, CloseNamesOnlyWithACutOff) {
  const Names commands = {"run",    "detect",  "bench", "compare", "specs",
                          "advise", "monitor", "model", "tune",    "check"};
  EXPECT_EQ(suggest("bechn", commands), Names{"bench"});
  EXPECT_EQ(suggest("chek", commands), Names{"check"});
  EXPECT_EQ(suggest("rnu", commands), Names{"run"});
  EXPECT_TRUE(suggest("frobnicate", commands).empty());
  EXPECT_TRUE(suggest("xyz", commands).empty());
  // "rtx 4090" is none of the data-centre GPUs: no suggestion rather than three.
  EXPECT_TRUE(suggest("rtx 4090", Names{"V100", "A100", "H100", "H200"}).empty());
}

TEST(Suggest, PrefixesSpellingAndRanking) {
  // What was typed is the start of a name: one edit more than a whole match.
  EXPECT_EQ(suggest("resnet", Names{"resnet50", "bert-large"}), Names{"resnet50"});
  EXPECT_EQ(suggest("bert", Names{"resnet50", "bert-large", "all"}), Names{"bert-large"});
  // Case, '-', '_' and spaces do not count.
  EXPECT_EQ(suggest("BERT_LARG", Names{"bert-large"}), Names{"bert-large"});
  // Nearer first; a name answers to every spelling it has, and is listed once.
  const std::vector<NameCandidate> gpus = {
      {"H100-SXM", {"H100-SXM", "H100"}}, {"H200-SXM", {"H200-SXM", "H200"}}, {"L40S", {}}};
  EXPECT_EQ(suggest("H20", gpus, 1), Names{"H200-SXM"});
  EXPECT_EQ(suggest("L40", gpus), Names{"L40S"});
  EXPECT_EQ(suggest("h300", gpus).size(), 2u);
  EXPECT_EQ(suggest("h300", gpus, 1).size(), 1u);
  // Up to 2 characters: at most 1 edit.
  EXPECT_EQ(suggest("ab", Names{"abc", "xy"}), Names{"abc"});
  EXPECT_TRUE(suggest("zz", Names{"abc"}).empty());
}

TEST(Suggest, MessageTails) {
  EXPECT_EQ(did_you_mean({}), "");
  EXPECT_EQ(did_you_mean({"a", "b"}), "; did you mean: a, b?");
  EXPECT_EQ(did_you_mean_or_known({}, "x, y"), "; known: x, y");
  EXPECT_EQ(did_you_mean_or_known({"x"}, "x, y"), "; did you mean: x? Known: x, y");
}

TEST(Suggest, EveryNameAUserTypes) {
  using gpuvs_test::run_gpuvs;
  const auto expect = [](const std::string& args, const std::string& part, bool present) {
    const gpuvs_test::CliOutcome o = run_gpuvs(args);
    EXPECT_EQ(o.code, 2) << args << ": " << o.err;
    EXPECT_EQ(o.err.find(part) != std::string::npos, present) << args << ": " << o.err;
    EXPECT_EQ(o.err.find('\n'), o.err.size() - 1) << args << ": not one line: " << o.err;
  };
  expect("bechn", "unknown command 'bechn'; did you mean: bench?", true);
  expect("--out /tmp/gpuvs-suggest chek", "did you mean: check?", true);
  expect("frobnicate", "did you mean", false);
  expect("bench memory.hmb", "unknown benchmark 'memory.hmb'; did you mean: memory.hbm?", true);
  expect("model resnet", "did you mean: resnet50? Known: resnet50, bert-large", true);
  expect("tune --model bert", "did you mean: bert-large?", true);
  expect("specs show 'radeon rx 7900'", "did you mean", false);
  expect("specs show L40SS", "did you mean: L40S", true);
}

}  // namespace
}  // namespace gpuvs
