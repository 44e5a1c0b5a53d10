// Hostile text in the files gpuvs reads (run files, claims, catalogues, prices) and in
// labels, through the real binary to every output: the terminal gets no control
// character, Markdown tables keep their cells and pass no HTML, CSV cells cannot start
// a formula while figures stay numbers (core/text.h states the rules).
#include <gtest/gtest.h>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli_runner.h"
#include "csv_test_util.h"

namespace {

using gpuvs_test::CliOutcome;
using gpuvs_test::parse_csv;
namespace fs = std::filesystem;

std::string source(const std::string& rel) {
  return std::string(GPUVS_SOURCE_DIR) + "/" + rel;
}

// One word for /bin/sh, whatever bytes it holds.
std::string sh(const std::string& s) {
  std::string out = "'";
  for (char c : s)
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

class Scratch {
 public:
  Scratch() {
    dir_ = fs::temp_directory_path() /
           ("gpuvs_cli_output_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  ~Scratch() { fs::remove_all(dir_); }
  std::string file(const std::string& name, const std::string& text) const {
    std::ofstream(dir_ / name, std::ios::binary) << text;
    return (dir_ / name).string();
  }
  std::string read(const std::string& name) const {
    std::ifstream in(dir_ / name, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

 private:
  fs::path dir_;
};

// The first byte sequence a terminal would act on, described; empty when none: C0
// controls other than newline and tab, DEL, C1 (raw or UTF-8), bidi controls, and text
// that is not UTF-8 (nlohmann's writer refuses it).
std::string raw_control(const std::string& s) {
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    const auto next = [&](size_t k) {
      return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0u;
    };
    const bool c0 = c < 0x20 && c != '\n' && c != '\t';
    const bool c1 = c == 0xC2 && next(1) >= 0x80 && next(1) <= 0x9F;
    const bool bidi = c == 0xE2 && ((next(1) == 0x80 && next(2) >= 0xAA && next(2) <= 0xAE) ||
                                    (next(1) == 0x81 && next(2) >= 0xA6 && next(2) <= 0xA9));
    if (c0 || c == 0x7F || c1 || bidi)
      return "control byte 0x" + std::to_string(c) + " at " + std::to_string(i);
  }
  try {
    (void)nlohmann::json(s).dump();
  } catch (const nlohmann::json::exception&) {
    return "ill-formed UTF-8";
  }
  return "";
}

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// The column of `name` in the header row.
size_t column(const std::vector<std::vector<std::string>>& rows, const std::string& name) {
  for (size_t i = 0; i < rows.at(0).size(); ++i)
    if (rows[0][i] == name) return i;
  ADD_FAILURE() << "no column " << name;
  return 0;
}

// Each table line of a Markdown text has as many cells as its table's header: no
// newline or pipe from a file split a cell.
void expect_markdown_tables_intact(const std::string& md) {
  std::istringstream in(md);
  size_t header_cells = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] != '|') {
      header_cells = 0;
      continue;
    }
    size_t cells = 0;
    for (size_t i = 0; i < line.size(); ++i) {
      if (line[i] == '\\') {
        ++i;  // an escaped character, a pipe included
      } else if (line[i] == '|') {
        ++cells;
      }
    }
    if (header_cells == 0) header_cells = cells;
    EXPECT_EQ(cells, header_cells) << line;
  }
}

// Markdown that a renderer shows as gpuvs meant it: no raw control, no cell split, no
// HTML from a file.
void expect_safe_markdown(const std::string& md) {
  EXPECT_EQ(raw_control(md), "") << md;
  expect_markdown_tables_intact(md);
  EXPECT_FALSE(has(md, "<script")) << md;
  EXPECT_FALSE(has(md, "<img")) << md;
  EXPECT_FALSE(has(md, "<b>")) << md;
}

// The reference H200 run with its names replaced by hostile ones.
const std::string kGpuName =
    "@SUM(1+1)\x1b]0;TITLE\x07 H200\xe2\x80\xae"
    "001A|a\\|b\n<script>alert(1)</script>\xc2\x9b"
    "2J";
const std::string kHost = "=cmd|' /C calc'!A0";

std::string hostile_run(const Scratch& s) {
  std::ifstream in(source("data/reference/h200-sxm-run.json"));
  nlohmann::json doc = nlohmann::json::parse(in);
  doc["system"]["gpus"][0]["name"] = kGpuName;
  doc["meta"]["host"] = kHost;
  doc["system"]["os"] = "Linux\x1b[2J\x1b[H";
  doc["system"]["cpu"]["model"] = "cpu\xe2\x81\xa6<img src=x onerror=alert(1)>";
  return s.file("run.json", doc.dump());
}

TEST(CliOutput, HostileRunFileReachesNoTerminal) {
  const Scratch s;
  const std::string run = hostile_run(s);
  const CliOutcome t = gpuvs_test::run_gpuvs("compare " + run + " A100-SXM4-80GB");
  ASSERT_EQ(t.code, 0) << t.err;
  EXPECT_EQ(raw_control(t.out), "") << t.out;
  EXPECT_TRUE(has(t.out, "@SUM(1+1)\\x1b]0;TITLE\\x07 H200\\u202e001A|a\\|b\\n<script>")) << t.out;
  EXPECT_TRUE(has(t.out, "\\u009b2J")) << t.out;
  // Every table line is one line: the newline in the name is shown, not kept.
  EXPECT_FALSE(has(t.out, "\n<script>")) << t.out;

  const CliOutcome j = gpuvs_test::run_gpuvs("compare " + run + " A100-SXM4-80GB --json");
  ASSERT_EQ(j.code, 0) << j.err;
  EXPECT_EQ(raw_control(j.out), "") << j.out;
  // Still JSON, and it still says exactly what the file said.
  const nlohmann::json doc = nlohmann::json::parse(j.out);
  EXPECT_EQ(doc["columns"][0]["gpu_name"], kGpuName);
  EXPECT_EQ(doc["columns"][0]["host"], kHost);
  EXPECT_TRUE(has(j.out, "\\u202e")) << j.out;
}

TEST(CliOutput, HostileRunFileInMarkdownCsvAndHtml) {
  const Scratch s;
  const std::string run = hostile_run(s);
  const CliOutcome o =
      gpuvs_test::run_gpuvs("compare " + run + " A100-SXM4-80GB --out " + s.path("out"));
  ASSERT_EQ(o.code, 0) << o.err;

  const std::string md = s.read("out/compare.md");
  expect_safe_markdown(md);
  EXPECT_TRUE(has(md, "\\|a\\\\\\|b &lt;script&gt;alert(1)&lt;/script&gt;")) << md;
  EXPECT_TRUE(has(md, "\\\\x1b\\]0;TITLE\\\\x07")) << md;

  const std::string csv = s.read("out/compare.csv");
  EXPECT_EQ(raw_control(csv), "") << csv;
  const auto rows = parse_csv(csv);
  ASSERT_GT(rows.size(), 2u);
  const size_t gpu = column(rows, "gpu");
  const size_t value = column(rows, "value");
  const size_t diff = column(rows, "diff_pct");
  EXPECT_EQ(rows[1].at(gpu),
            "'@SUM(1+1)\\x1b]0;TITLE\\x07 H200\\u202e001A|a\\|b\n<script>alert(1)</script>"
            "\\u009b2J");
  // Figures are numbers: no quote, whatever their sign.
  bool negative = false;
  for (size_t r = 1; r < rows.size(); ++r) {
    ASSERT_EQ(rows[r].size(), rows[0].size()) << "row " << r;
    for (size_t c : {value, diff}) {
      const std::string& f = rows[r][c];
      if (f.empty()) continue;
      EXPECT_NE(f.front(), '\'') << f;
      EXPECT_NO_THROW((void)std::stod(f)) << f;
      negative = negative || f.front() == '-';
    }
  }
  EXPECT_TRUE(negative) << "a slower GPU has a negative diff_pct";

  const std::string html = s.read("out/compare.html");
  EXPECT_FALSE(has(html, "\x1b")) << "raw ESC in the HTML report";
  EXPECT_FALSE(has(html, "\xe2\x80\xae")) << "raw bidi override in the HTML report";
  EXPECT_FALSE(has(html, "<script>alert(1)")) << "raw script in the HTML report";

  // What goes to stdout is what goes to the files.
  EXPECT_EQ(gpuvs_test::run_gpuvs("compare " + run + " A100-SXM4-80GB --format csv").out, csv);
  EXPECT_EQ(gpuvs_test::run_gpuvs("compare " + run + " A100-SXM4-80GB --format md").out, md);
}

TEST(CliOutput, LabelsCannotStartAFormula) {
  for (const std::string prefix : {"=", "+", "-", "@", "\t", "\r"}) {
    const std::string label = prefix + "1+2";
    const CliOutcome o = gpuvs_test::run_gpuvs("compare A100-SXM4-80GB H200-SXM --label " +
                                               sh(label) + " --format csv");
    ASSERT_EQ(o.code, 0) << o.err;
    const auto rows = parse_csv(o.out);
    ASSERT_GT(rows.size(), 1u);
    const std::string shown = prefix == "\r" ? "\\x0d" : prefix;
    EXPECT_EQ(rows[1].at(column(rows, "column")), "'" + shown + "1+2") << o.out;
    // The same label in the terminal table: shown, not interpreted.
    const CliOutcome t =
        gpuvs_test::run_gpuvs("compare A100-SXM4-80GB H200-SXM --label " + sh(label));
    EXPECT_EQ(raw_control(t.out), "") << t.out;
  }
}

TEST(CliOutput, LabelsInMarkdownAndInvalidUtf8) {
  const std::string label = "a|b\\|c\nd <b>x</b> `y` [z](http://e)";
  const CliOutcome md = gpuvs_test::run_gpuvs("compare A100-SXM4-80GB H200-SXM --label " +
                                              sh(label) + " --format md");
  ASSERT_EQ(md.code, 0) << md.err;
  expect_safe_markdown(md.out);
  EXPECT_TRUE(has(md.out, "a\\|b\\\\\\|c d &lt;b&gt;x&lt;/b&gt; \\`y\\` \\[z\\](http://e)"))
      << md.out;

  // A label that is not UTF-8 is refused in every format, and the message that names
  // it shows its bytes escaped, not raw.
  for (const std::string format : {"table", "md", "csv", "json"}) {
    const CliOutcome o = gpuvs_test::run_gpuvs("compare A100-SXM4-80GB --label " +
                                               sh("GPU\xff\xfe\xc0\xaf") + " --format " + format);
    EXPECT_EQ(o.code, 2) << format << ": " << o.err;
    EXPECT_EQ(o.out, "") << format;
    EXPECT_EQ(raw_control(o.err), "") << format;
    EXPECT_TRUE(has(o.err, "--label \"GPU\\xff\\xfe\\xc0\\xaf\": byte 3 is not UTF-8"))
        << format << ": " << o.err;
    EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << o.err;
  }
}

TEST(CliOutput, HostileClaimsFile) {
  const Scratch s;
  const std::string claims = s.file(
      "claims.csv",
      "gpu,metric,value,unit,source\n"
      "\"=HYPERLINK(\"\"http://evil\"\",\"\"click\"\")\",memory bandwidth,2,TB/s,+SUM(A1)\n"
      "@A100<script>alert(1)</script>|\\|,memory bandwidth,2,TB/s,\"-2+3, said \"\"x\"\"\"\n"
      "A100-SXM4-80GB,memory bandwidth,1,TB/s,\"\ttab\"\n"
      "A100\x1b]0;T\x07,memory bandwidth,2,TB/s,<script>alert(1)</script>|\\|\xe2\x80\xae\n");
  const CliOutcome o =
      gpuvs_test::run_gpuvs("compare --claims " + claims + " --out " + s.path("out"));
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(raw_control(o.out), "") << o.out;
  EXPECT_TRUE(has(o.out, "A100\\x1b]0;T\\x07")) << o.out;

  const auto rows = parse_csv(s.read("out/claims.csv"));
  ASSERT_EQ(rows.size(), 5u);
  const size_t gpu = column(rows, "gpu");
  const size_t src = column(rows, "source");
  const size_t off = column(rows, "off_pct");
  const size_t value = column(rows, "value");
  EXPECT_EQ(rows[1].at(gpu), "'=HYPERLINK(\"http://evil\",\"click\")");
  EXPECT_EQ(rows[1].at(src), "'+SUM(A1)");
  EXPECT_EQ(rows[2].at(gpu), "'@A100<script>alert(1)</script>|\\|");
  EXPECT_EQ(rows[2].at(src), "'-2+3, said \"x\"");
  EXPECT_EQ(rows[3].at(src), "'\ttab");
  EXPECT_EQ(rows[4].at(gpu), "A100\\x1b]0;T\\x07");
  // 1 TB/s against the A100's 2.039: a negative figure, written as a number.
  EXPECT_EQ(rows[3].at(value), "1");
  ASSERT_FALSE(rows[3].at(off).empty());
  EXPECT_EQ(rows[3].at(off).front(), '-') << rows[3].at(off);
  EXPECT_TRUE(has(s.read("out/claims.csv"), "," + rows[3].at(off) + ","));

  const std::string md = s.read("out/claims.md");
  expect_safe_markdown(md);
  EXPECT_TRUE(has(md, "| @A100&lt;script&gt;alert(1)&lt;/script&gt;\\|\\\\\\| |")) << md;
  EXPECT_TRUE(has(md, "| A100\\\\x1b\\]0;T\\\\x07 |")) << md;
}

TEST(CliOutput, HostileCatalogue) {
  const Scratch s;
  nlohmann::json gpu = {{"id", "MY-GPU"},
                        {"name", "My\x1b]0;TITLE\x07 GPU\xe2\x80\xae|x\n<script>"},
                        {"architecture", "Test\xc2\x9b"},
                        {"form_factor", "PCIe"},
                        {"memory_type", "HBM3"},
                        {"note", "=1+2 <img src=x onerror=alert(1)>\x1b[2J"},
                        {"source", "https://example.com/my-gpu"},
                        {"figures", {{"memory.size", {{"value", 1}, {"unit", "TB"}}}}}};
  const std::string cat = s.file(
      "catalogue.json", nlohmann::json{{"schema", "gpuvs.catalogue/1"}, {"gpus", {gpu}}}.dump());
  for (const std::string cmd :
       {"specs show my-gpu", "specs list", "compare my-gpu", "compare my-gpu --format md",
        "compare my-gpu --format csv", "compare my-gpu --json"}) {
    const CliOutcome o = gpuvs_test::run_gpuvs(cmd + " --catalogue " + cat);
    // Whether the loader takes such names or refuses them, nothing raw is printed.
    EXPECT_EQ(raw_control(o.out), "") << cmd << ": " << o.out;
    EXPECT_EQ(raw_control(o.err), "") << cmd << ": " << o.err;
    if (o.code == 2) continue;
    ASSERT_EQ(o.code, 0) << cmd << ": " << o.err;
    if (has(cmd, "--json")) {
      EXPECT_EQ(nlohmann::json::parse(o.out)["columns"][0]["gpu_name"], gpu["name"]);
    } else if (has(cmd, "md")) {
      expect_safe_markdown(o.out);
    } else if (has(cmd, "csv")) {
      const auto rows = parse_csv(o.out);
      ASSERT_GT(rows.size(), 1u);
      EXPECT_EQ(rows[1].at(column(rows, "gpu")).rfind("My\\x1b]0;TITLE\\x07 GPU", 0), 0u);
    } else {
      EXPECT_TRUE(has(o.out, "My\\x1b]0;TITLE\\x07 GPU\\u202e|x\\n<script>")) << o.out;
    }
  }
}

TEST(CliOutput, HostilePricesFile) {
  const Scratch s;
  const std::string prices =
      s.file("prices.csv",
             "# Prices \x1b]0;pwned\x07 from \xe2\x80\xae"
             "evil\xc2\x85\n"
             "gpu,price_per_gpu_hour,currency,source\n"
             "H200-SXM,3.5,USD,\"=HYPERLINK(\"\"http://evil\"\")\x1b[2J\"\n");
  const CliOutcome o = gpuvs_test::run_gpuvs("advise --model 7B --prices " + prices);
  EXPECT_EQ(raw_control(o.out), "") << o.out;
  EXPECT_EQ(raw_control(o.err), "") << o.err;
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_TRUE(has(o.out, "Prices \\x1b]0;pwned\\x07 from \\u202eevil\\u0085")) << o.out;
  const CliOutcome j = gpuvs_test::run_gpuvs("advise --model 7B --json --prices " + prices);
  ASSERT_EQ(j.code, 0) << j.err;
  EXPECT_EQ(raw_control(j.out), "") << j.out;
  EXPECT_TRUE(nlohmann::json::accept(j.out)) << j.out;
}

TEST(CliOutput, ErrorMessagesAreEscaped) {
  const Scratch s;
  for (const std::string& cmd :
       {"compare " + sh("A100\x1b]0;TITLE\x07\xe2\x80\xae"),
        "compare --claims " + s.file("bad.csv", "gpu,metric,value,unit\nA100\x1b[2J,bw,x,y\n"),
        "specs show " + sh("\x9b"
                           "2J\xc2\x9b")}) {
    const CliOutcome o = gpuvs_test::run_gpuvs(cmd);
    EXPECT_EQ(o.code, 2) << cmd << ": " << o.err;
    EXPECT_FALSE(o.err.empty()) << cmd;
    EXPECT_EQ(raw_control(o.err), "") << cmd << ": " << o.err;
  }
}

}  // namespace
