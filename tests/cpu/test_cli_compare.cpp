// `gpuvs compare` as a user meets it: tables of run files and catalogue GPUs in every
// format, the claims check and its exit codes, and one-line usage errors (exit 2).
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>
#include "cli_runner.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

namespace {

using Outcome = gpuvs_test::CliOutcome;

Outcome run_gpuvs(const std::string& args) {
  return gpuvs_test::run_gpuvs(args);
}

std::string source(const std::string& rel) {
  return std::string(GPUVS_SOURCE_DIR) + "/" + rel;
}

const std::string kRun = source("data/reference/h200-sxm-run.json");
const std::string kClaims = source("data/claims/a100-vs-h200-96gb-article.csv");

std::filesystem::path temp_file(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("gpuvs_cli_compare_" + std::to_string(::getpid()) + "_" + name);
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

void expect_one_line_usage_error(const Outcome& o, const std::string& says) {
  EXPECT_EQ(o.code, 2) << o.err;
  EXPECT_TRUE(o.out.empty()) << o.out;
  ASSERT_FALSE(o.err.empty());
  EXPECT_EQ(o.err.find('\n'), o.err.size() - 1) << "not one line: " << o.err;
  EXPECT_NE(o.err.find(says), std::string::npos) << o.err;
}

TEST(CliCompare, CatalogueEntriesSideBySide) {
  const Outcome o = run_gpuvs("compare H200-SXM A100-SXM4-80GB");
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("Memory bandwidth"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("4.80 TB/s (ds)"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("vs H200-SXM"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("slower"), std::string::npos) << o.out;
  EXPECT_TRUE(o.err.empty()) << o.err;
}

TEST(CliCompare, RunFileAgainstSpecAsJson) {
  for (const std::string& flags : {std::string("--format json"), std::string("--json")}) {
    const Outcome o = run_gpuvs("compare " + kRun + " A100 " + flags);
    ASSERT_EQ(o.code, 0) << flags << ": " << o.err;
    EXPECT_TRUE(o.err.empty()) << o.err;
    const nlohmann::json doc = nlohmann::json::parse(o.out);  // nothing else on stdout
    EXPECT_EQ(doc["schema"], "gpuvs.compare/1");
    ASSERT_EQ(doc["columns"].size(), 2u);
    EXPECT_TRUE(doc["columns"][0]["measured"].get<bool>());
    EXPECT_EQ(doc["columns"][0]["catalogue_id"], "H200-SXM");
    EXPECT_EQ(doc["columns"][1]["catalogue_id"], "A100-SXM4-80GB");
    bool found = false;
    for (const auto& row : doc["rows"]) {
      if (row["metric"] != "memory.bandwidth") continue;
      found = true;
      EXPECT_EQ(row["cells"][0]["source"], "measured");
      EXPECT_GT(row["cells"][0]["of_datasheet"].get<double>(), 0.8);
      // A measurement against a datasheet: both shown, no speed verdict between them.
      EXPECT_EQ(row["cells"][1]["verdict"], "different basis");
      EXPECT_TRUE(row["cells"][1]["ratio"].is_null());
      EXPECT_NEAR(row["cells"][1]["datasheet_ratio"].get<double>(), 2039.0 / 4800, 1e-9);
    }
    EXPECT_TRUE(found);
  }
}

TEST(CliCompare, MarkdownCsvAndBaseline) {
  const Outcome md = run_gpuvs("compare H200-SXM A100-SXM4-80GB --format md");
  EXPECT_EQ(md.code, 0);
  // The headline first, then the table.
  EXPECT_EQ(md.out.rfind("**At a glance: A100-SXM4-80GB (other) against H200-SXM (baseline).**", 0),
            0u)
      << md.out;
  EXPECT_NE(md.out.find("\n| metric | H200-SXM | A100-SXM4-80GB | vs H200-SXM |"),
            std::string::npos)
      << md.out;
  const Outcome csv = run_gpuvs("compare H200-SXM A100-SXM4-80GB --format csv");
  EXPECT_EQ(csv.code, 0);
  EXPECT_EQ(
      csv.out.rfind("metric,name,config,unit,column,gpu,catalogue_id,source,fallback,value,", 0),
      0u)
      << csv.out;
  const Outcome b = run_gpuvs("compare H200-SXM A100-SXM4-80GB --baseline 2");
  EXPECT_EQ(b.code, 0) << b.err;
  EXPECT_NE(b.out.find("vs A100-SXM4-80GB"), std::string::npos) << b.out;
  EXPECT_NE(b.out.find("faster"), std::string::npos) << b.out;
  const Outcome named = run_gpuvs("compare H200-SXM A100-SXM4-80GB --baseline a100");
  EXPECT_EQ(named.code, 0) << named.err;
  EXPECT_EQ(named.out, b.out);
}

// No "1.13x faster" between a measurement and a datasheet: two H200 runs and
// the A100's catalogue entry, as JSON. No speed verdict across bases; the two GPUs of
// the two-GPU run read "same" for the HBM copy; columns carry file, host and UUID.
TEST(CliCompare, NoVerdictAcrossBasesAsJson) {
  const Outcome o =
      run_gpuvs("compare " + source("data/reference/h200x2-run.json") + " " +
                source("data/reference/h200-bench-compute.json") + " A100-SXM4-80GB --format json");
  ASSERT_EQ(o.code, 0) << o.err;
  const nlohmann::json doc = nlohmann::json::parse(o.out);
  ASSERT_EQ(doc["columns"].size(), 4u);
  for (size_t i = 0; i < 3; ++i) {
    const auto& col = doc["columns"][i];
    EXPECT_TRUE(col["measured"].get<bool>());
    EXPECT_NE(col["file"].get<std::string>().find(".json"), std::string::npos) << col;
    EXPECT_EQ(col["host"], "vm");
    EXPECT_EQ(col["uuid"].get<std::string>().rfind("GPU-", 0), 0u) << col;
  }
  EXPECT_TRUE(doc["columns"][3]["file"].is_null());
  const std::set<std::string> verdicts = {"same", "faster", "slower", "higher", "lower"};
  size_t checked = 0;
  for (const auto& row : doc["rows"]) {
    const auto& base = row["cells"][0];
    for (size_t i = 1; i < row["cells"].size(); ++i) {
      const auto& cell = row["cells"][i];
      if (!verdicts.count(cell["verdict"].get<std::string>())) continue;
      ++checked;
      // One basis: a measured column's datasheet stand-in counts as datasheet.
      EXPECT_EQ(cell["source"], base["source"]) << row["metric"] << " " << i;
      EXPECT_EQ(cell["basis"], base["source"]) << row["metric"] << " " << i;
    }
    if (row["metric"] == "memory.bandwidth") {
      EXPECT_EQ(row["cells"][1]["verdict"], "same");
      EXPECT_EQ(row["cells"][2]["verdict"], "different basis");
      EXPECT_TRUE(row["cells"][2]["fallback"].get<bool>());
      EXPECT_EQ(row["cells"][3]["verdict"], "different basis");
    }
  }
  EXPECT_GT(checked, 50u);
  // The headline: one pair per other column, bases said.
  ASSERT_EQ(doc["headline"].size(), 3u);
  for (const auto& item : doc["headline"][2]["items"])
    if (item["metric"] == "memory.bandwidth") {
      EXPECT_EQ(item["basis"], "different");
      EXPECT_TRUE(item["ratio"].is_null());
    }
}

TEST(CliCompare, LabelsNameTheColumns) {
  const Outcome o = run_gpuvs("compare " + source("data/reference/h200x2-run.json") +
                              " --label node7 A100-SXM4-80GB --label 'A100 (catalogue)' --json");
  ASSERT_EQ(o.code, 0) << o.err;
  const nlohmann::json doc = nlohmann::json::parse(o.out);
  ASSERT_EQ(doc["columns"].size(), 3u);
  EXPECT_EQ(doc["columns"][0]["label"], "node7 #0");
  EXPECT_EQ(doc["columns"][1]["label"], "node7 #1");
  EXPECT_EQ(doc["columns"][2]["label"], "A100 (catalogue)");
  expect_one_line_usage_error(run_gpuvs("compare H200 --label a --label b"), "one label per input");
}

TEST(CliCompare, UsageErrors) {
  expect_one_line_usage_error(run_gpuvs("compare H300"), "did you mean");
  expect_one_line_usage_error(run_gpuvs("compare"), "--claims");
  expect_one_line_usage_error(run_gpuvs("compare H200-SXM A100 --baseline 7"),
                              "--baseline 7: no such column");
  expect_one_line_usage_error(run_gpuvs("compare /nonexistent/run.json"), "/nonexistent/run.json");
  const auto bad = temp_file("bad.json", "{\"schema\": \"gpuvs.run/1\", \"meta\": 3}");
  expect_one_line_usage_error(run_gpuvs("compare " + bad.string()), bad.string());
  std::filesystem::remove(bad);
  EXPECT_EQ(run_gpuvs("compare H200-SXM --format xml").code, 2);
}

TEST(CliCompare, ClaimsCheckExitsZeroUnlessStrict) {
  const Outcome o = run_gpuvs("compare --claims " + kClaims);
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("no H200 has 96 GB; the H200 SXM has 141 GB (datasheet)"), std::string::npos)
      << o.out;
  EXPECT_NE(o.out.find("contradicted"), std::string::npos);
  EXPECT_NE(o.out.find("14 claims:"), std::string::npos);
  const Outcome strict = run_gpuvs("compare --strict --claims " + kClaims);
  EXPECT_EQ(strict.code, 1);
  EXPECT_NE(strict.err.find("contradicted (--strict)"), std::string::npos) << strict.err;
  const Outcome json = run_gpuvs("--json compare --claims " + kClaims);
  EXPECT_EQ(json.code, 0);
  const nlohmann::json doc = nlohmann::json::parse(json.out);
  EXPECT_EQ(doc["schema"], "gpuvs.claims/1");
  EXPECT_EQ(doc["claims"].size(), 14u);
}

TEST(CliCompare, ClaimsWithARunGiveBothTables) {
  const Outcome o = run_gpuvs("compare " + kRun + " --claims " + kClaims + " --format json");
  ASSERT_EQ(o.code, 0) << o.err;
  const nlohmann::json doc = nlohmann::json::parse(o.out);
  EXPECT_EQ(doc["comparison"]["schema"], "gpuvs.compare/1");
  EXPECT_EQ(doc["claims"]["schema"], "gpuvs.claims/1");
}

// CSV is one table per stream: with a comparison and claims, stdout carries the claims
// alone (every row the claims' columns), stderr says where the comparison goes, and
// --out writes both, one file each.
TEST(CliCompare, CsvWithClaimsIsOneTable) {
  const Outcome o = run_gpuvs("compare " + kRun + " --claims " + kClaims + " --format csv");
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.out.find("\n\n"), std::string::npos) << "two tables in one stream:\n" << o.out;
  std::istringstream lines(o.out);
  std::string header, line;
  std::getline(lines, header);
  const auto fields = [](const std::string& l) {
    size_t n = 1;
    bool quoted = false;
    for (char c : l) {
      if (c == '"') quoted = !quoted;
      n += !quoted && c == ',';
    }
    return n;
  };
  size_t rows = 0;
  while (std::getline(lines, line)) {
    EXPECT_EQ(fields(line), fields(header)) << line;
    ++rows;
  }
  EXPECT_EQ(rows, 14u) << "one row per claim of the article's file";
  EXPECT_NE(o.err.find("compare.csv"), std::string::npos) << o.err;
  const Outcome claims_only = run_gpuvs("compare --claims " + kClaims + " --format csv");
  EXPECT_EQ(claims_only.out.substr(0, claims_only.out.find('\n')), header);
}

TEST(CliCompare, MalformedClaimsFileIsOneLine) {
  const auto bad = temp_file("claims.csv", "gpu,metric,value,unit\nH200,fp16,lots,TFLOPS\n");
  expect_one_line_usage_error(run_gpuvs("compare --claims " + bad.string()), bad.string() + ":2:");
  std::filesystem::remove(bad);
}

TEST(CliCompare, OutWritesEveryFormat) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("gpuvs_cli_compare_out_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const Outcome o =
      run_gpuvs("compare H200-SXM A100 --claims " + kClaims + " -q --out " + dir.string());
  EXPECT_EQ(o.code, 0) << o.err;
  for (const char* f : {"compare.md", "compare.csv", "compare.json", "compare.html", "claims.md",
                        "claims.csv", "claims.json"})
    EXPECT_TRUE(std::filesystem::exists(dir / f)) << f;
  // The HTML report holds the comparison and the claims, and is a whole page.
  std::ifstream in(dir / "compare.html");
  const std::string html((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(html.find("<html"), std::string::npos);
  EXPECT_NE(html.find("</html>"), std::string::npos);
  EXPECT_NE(html.find("A100"), std::string::npos);
  EXPECT_NE(html.find("H200"), std::string::npos);
  EXPECT_NE(html.find("claim"), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(CliCompare, OutRefusesASymbolicLinkAndLeavesItsTarget) {
  // `ln -s TARGET DIR/compare.html; gpuvs compare RUN --out DIR`: gpuvs must not
  // write through the link (into a file the user may not have meant to give it).
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / ("gpuvs_cli_compare_link_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path target = dir / "target.txt";
  { std::ofstream(target, std::ios::binary) << "not a report\n"; }
  const fs::path link = dir / "out" / "compare.html";
  fs::create_directories(link.parent_path());
  fs::create_symlink(target, link);
  const Outcome o = run_gpuvs("compare " + kRun + " --out " + (dir / "out").string());
  EXPECT_EQ(o.code, 1) << o.err;
  ASSERT_FALSE(o.err.empty());
  EXPECT_EQ(o.err.find('\n'), o.err.size() - 1) << "not one line: " << o.err;
  EXPECT_EQ(o.err, "gpuvs: cannot write " + link.string() +
                       ": it is a symbolic link (gpuvs does not write through links; remove it "
                       "or write elsewhere)\n");
  std::ifstream in(target, std::ios::binary);
  const std::string kept((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(kept == "not a report\n")
      << "the target now holds " << kept.size() << " bytes: " << kept.substr(0, 60);
  EXPECT_TRUE(fs::is_symlink(link));
  // No temporary file is left beside it; the other formats were written whole.
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir / "out"))
    names.insert(e.path().filename().string());
  EXPECT_EQ(names,
            (std::set<std::string>{"compare.csv", "compare.html", "compare.json", "compare.md"}));
  fs::remove_all(dir);
}

// On a terminal the tables and notes fit its width ($COLUMNS here: `script` gives gpuvs a
// pseudo-terminal); --wide keeps the full width; a pipe gets the full width whatever
// $COLUMNS says.
TEST(CliCompare, OnATerminalTablesFitItsWidth) {
  if (std::system("command -v script > /dev/null 2>&1") != 0)
    GTEST_SKIP() << "script (util-linux) is not installed";
  const auto widest = [](const std::string& text) {
    size_t w = 0, line = 0;
    for (unsigned char c : text) {
      if (c == '\n') {
        w = std::max(w, line);
        line = 0;
      } else if (c != '\r' && (c & 0xC0) != 0x80) {
        ++line;
      }
    }
    return std::max(w, line);
  };
  const auto on_terminal = [](const std::string& args) {
    const std::string inner = std::string(GPUVS_BIN) + " " + args;
    FILE* p = ::popen(("COLUMNS=90 script -qec '" + inner + "' /dev/null").c_str(), "r");
    std::string out;
    if (!p) return out;
    std::array<char, 4096> buf{};
    size_t n;
    while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0)
      out.append(buf.data(), n);
    ::pclose(p);
    return out;
  };
  const std::string fitted = on_terminal("compare H200-SXM A100-SXM4-80GB");
  ASSERT_NE(fitted.find("Memory bandwidth"), std::string::npos) << fitted;
  EXPECT_LE(widest(fitted), 90u) << fitted;
  const std::string wide = on_terminal("--wide compare H200-SXM A100-SXM4-80GB");
  EXPECT_GT(widest(wide), 90u);
  const Outcome piped = run_gpuvs("compare H200-SXM A100-SXM4-80GB");
  EXPECT_GT(widest(piped.out), 90u) << "no width logic when stdout is not a terminal";
  // advise's table and the notes below it: each long line wrapped under its indent.
  const std::string advise = on_terminal("advise train --model 7B --gpus 8");
  ASSERT_NE(advise.find("Assumptions:"), std::string::npos) << advise;
  EXPECT_LE(widest(advise), 90u) << advise;
  EXPECT_GT(widest(run_gpuvs("advise train --model 7B --gpus 8").out), 90u);
  // Eleven columns cannot fit 90 even at their narrowest: the "why" follows as notes.
  const std::string infer = on_terminal("advise infer --model llama-2-70b");
  EXPECT_LE(widest(infer), 90u) << infer;
  EXPECT_NE(infer.find("\nwhy:\r\n  1: "), std::string::npos) << infer;  // the terminal's CR LF
}

}  // namespace
