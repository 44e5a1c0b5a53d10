// Claims and prices files that a loader must refuse before any output is written:
// text that is not UTF-8 (it would make the JSON outputs fail after the text ones
// were written), NUL bytes, values that overflow or underflow once converted to the
// metric's unit, prices no currency has, files without end (/dev/zero) or too large.
// Each refusal is one UsageError line naming the file and the line.
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "advise/prices.h"
#include "core/error.h"
#include "report/claims.h"
#include "report/render.h"
#include "specs/catalogue.h"
#include "specs/published.h"
#include "usage_error.h"

namespace gpuvs {
namespace {

const auto refusal = gpuvs_test::usage_error_of;

constexpr const char* kHeader = "gpu,metric,value,unit,source,precision,setting\n";

std::string claims_refusal(const std::string& body, const char* name = "c.csv") {
  return refusal([&] { parse_claims(std::string(kHeader) + body, name); });
}

TEST(ClaimsHostile, TextThatIsNotUtf8IsRefusedWithItsLine) {
  const std::pair<std::string, std::string> cases[] = {
      {"H200 caf\xe9,fp16,989,TFLOPS,,,\n", "c.csv:2: byte 0xe9 is not UTF-8"},    // Latin-1 gpu
      {"H200,fp16,989,TFLOPS,slide \xff,,\n", "c.csv:2: byte 0xff is not UTF-8"},  // source
      {"H200,fp16,989,TFLOPS,,,batch\x80\n", "c.csv:2: byte 0x80 is not UTF-8"},   // setting
      {"H200,fp16,989,TFLOPS,,\xc0\xaf,\n", "c.csv:2: byte 0xc0 is not UTF-8"},    // overlong
      {"# ok\nH200,fp16,989,TFLOPS,\xed\xa0\x80,,\n", "c.csv:3: byte 0xed"},       // surrogate
      {"H200,fp16,989,TFLOPS,,,\n# cut \xe2\x82", "c.csv:3: byte 0xe2"},           // at the end
  };
  for (const auto& [body, want] : cases) {
    const std::string msg = claims_refusal(body);
    EXPECT_EQ(msg.rfind(want, 0), 0u) << msg;
  }
  // TOML (where toml++ is built in, it checks UTF-8 too; otherwise the check above).
  const std::string toml =
      "[[claim]]\ngpu = \"H200\"\nmetric = \"fp16\"\nvalue = 1\nunit = \"TFLOPS\"\n"
      "source = \"caf\xe9\"\n";
  EXPECT_EQ(refusal([&] { parse_claims(toml, "c.toml"); }).rfind("c.toml:", 0), 0u);
}

TEST(ClaimsHostile, NulBytesAreRefused) {
  EXPECT_EQ(claims_refusal(std::string("H200,fp16,989,TFLOPS,a\0b,,\n", 27)),
            "c.csv:2: contains a NUL byte (a claims file is text)");
}

TEST(ClaimsHostile, ValuesOutOfRangeOnceConvertedAreRefused) {
  // 1e300 PB/s is finite; in B/s it is not: there is no figure to judge it by, and
  // judging it printed "inf" and called the datasheet figure 0.
  EXPECT_EQ(claims_refusal("H200,memory bandwidth,1e300,PB/s,,,\n"),
            "c.csv:2: value 1e+300 PB/s is out of range once converted to B/s");
  EXPECT_EQ(claims_refusal("H200,fp16,1e306,PFLOPS,,,\n"),
            "c.csv:2: value 1e+306 PFLOPS is out of range once converted to FLOP/s");
  EXPECT_EQ(claims_refusal("H200,memory,1e299,TB,,,\n"),
            "c.csv:2: value 1e+299 TB is out of range once converted to B");
  EXPECT_EQ(claims_refusal("H200,fp16,1e-310,TFLOPS,,,\n"),
            "c.csv:2: value 1e-310 is too small to be a figure");
  EXPECT_EQ(claims_refusal("H200,fp16,4.9e-324,TFLOPS,,,\n"),
            "c.csv:2: value 5e-324 is too small to be a figure");
}

TEST(ClaimsHostile, LargeButFiniteClaimsAreJudgedWithTheirFigures) {
  const std::vector<Claim> claims =
      parse_claims(std::string(kHeader) + "H200,memory bandwidth,1e200,TB/s,,,\n", "c.csv");
  const auto judged =
      judge_claims(claims, {}, Catalogue::builtin(), Published::builtin(), ClaimOptions{});
  ASSERT_EQ(judged.size(), 1u);
  EXPECT_EQ(judged[0].verdict, ClaimVerdict::kContradicted);
  EXPECT_EQ(judged[0].why.find("inf"), std::string::npos) << judged[0].why;
  EXPECT_EQ(judged[0].why.find(" is 0 "), std::string::npos) << judged[0].why;
  EXPECT_NE(judged[0].why.find("4.8 TB/s"), std::string::npos) << judged[0].why;
  for (TextFormat f :
       {TextFormat::kTerminal, TextFormat::kMarkdown, TextFormat::kCsv, TextFormat::kJson})
    EXPECT_EQ(render_claims(judged, f).find("inf"), std::string::npos);
}

class HostileFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("gpuvs_hostile_loaders_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path write(const std::string& name, const std::string& text) {
    const auto p = dir_ / name;
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }
  std::filesystem::path dir_;
};

TEST_F(HostileFiles, ClaimsFilesAreBounded) {
  EXPECT_EQ(refusal([] { load_claims("/dev/zero"); }),
            "/dev/zero: cannot read: it is a character device, not a file (give a claims file)");
  EXPECT_EQ(refusal([&] { load_claims(dir_); }), dir_.string() + ": cannot read: Is a directory");
  const auto big = write("big.csv", std::string(kHeader) + std::string(1 << 20, '#'));
  EXPECT_EQ(refusal([&] { load_claims(big); }),
            big.string() + ": file is larger than 1 MiB, the limit for a claims file");
  const auto ok = write("ok.csv", std::string(kHeader) + "H200,fp16,989,TFLOPS,,,\n");
  EXPECT_EQ(load_claims(ok).size(), 1u);
}

TEST_F(HostileFiles, PricesFilesAreBoundedAndUtf8) {
  const Catalogue& cat = Catalogue::builtin();
  EXPECT_EQ(refusal([&] { advise::Prices::load("/dev/zero", cat); }),
            "/dev/zero: cannot read: it is a character device, not a file (give a prices file)");
  const auto big = write("big.csv", std::string((1 << 20) + 1, '#'));
  EXPECT_EQ(refusal([&] { advise::Prices::load(big, cat); }),
            big.string() + ": file is larger than 1 MiB, the limit for a prices file");
  const std::string header = "gpu,price_per_gpu_hour,currency,source\n";
  const auto prices_refusal = [&](const std::string& text) {
    return refusal([&] { advise::Prices::parse(text, "p.csv", cat); });
  };
  EXPECT_EQ(prices_refusal("# caf\xe9 prices\n" + header + "H200-SXM,3.5,USD,x\n"),
            "p.csv:1: byte 0xe9 is not UTF-8 (save the file as UTF-8)");
  EXPECT_EQ(prices_refusal(header + "H200-SXM,3.5,USD,quote \xff\n"),
            "p.csv:2: byte 0xff is not UTF-8 (save the file as UTF-8)");
  EXPECT_EQ(prices_refusal(header + std::string("H200-SXM,3.5,US\0D,x\n", 20)),
            "p.csv:2: contains a NUL byte (a prices file is text)");
  for (const char* price : {"1e-310", "0", "-3", "1e300", "inf", "nan"}) {
    const std::string msg = prices_refusal(header + "H200-SXM," + price + ",USD,x\n");
    EXPECT_NE(msg.find("p.csv:2: price"), std::string::npos) << price << ": " << msg;
  }
  EXPECT_NO_THROW(advise::Prices::parse(header + "H200-SXM,3.5,USD,x\n", "p.csv", cat));
}

}  // namespace
}  // namespace gpuvs
