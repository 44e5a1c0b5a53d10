// Levels 2 and 3's verdicts (check/level_verdicts.h): PCI bus ids in NVML's and CUDA's
// forms name one device, a GPU hidden from CUDA matches nothing; the memory test fails
// on any error and warns below 90 % of free memory (89.9 % warns, 90 % passes); GEMM
// bits and rates against the node; PCIe rates per generation; bandwidth floors (at the
// floor passes, just below fails, a missing figure skips); the sustained load's
// verdict with its notes and failures.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "check/level_verdicts.h"

namespace gpuvs::check {
namespace {

constexpr const char* kDcgmDiag =
    "NVIDIA DCGM diagnostics (dcgmi diag: memory test, targeted stress)";
constexpr const char* kDcgmPower = "NVIDIA DCGM targeted power test; docs/check.md";

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Every verdict says what it saw, the rule and its source, each on one line.
void expect_complete(const TestVerdict& t) {
  EXPECT_FALSE(t.reason.empty()) << t.test;
  EXPECT_FALSE(t.threshold.empty()) << t.test;
  EXPECT_FALSE(t.source.empty()) << t.test;
  EXPECT_FALSE(has(t.reason, "\n")) << t.test << ": " << t.reason;
  EXPECT_FALSE(has(t.threshold, "\n")) << t.test << ": " << t.threshold;
}

// ---- PCI bus ids ---------------------------------------------------------------------

TEST(PciBusKey, NvmlAndCudaFormsOfOneDeviceAreEqual) {
  const auto nvml = pci_bus_key("00000000:1B:00.0");
  const auto cuda = pci_bus_key("0000:1b:00.0");
  ASSERT_TRUE(nvml.has_value());
  ASSERT_TRUE(cuda.has_value());
  EXPECT_EQ(*nvml, *cuda);
  EXPECT_EQ(*nvml, uint64_t{0x1b} << 16);
  EXPECT_EQ(pci_bus_key("0000:1B:00.0"), nvml);  // NVML's legacy 4-digit form
}

TEST(PciBusKey, EveryFieldCounts) {
  EXPECT_EQ(pci_bus_key("0001:2a:1f.7"),
            (uint64_t{1} << 32) | (uint64_t{0x2a} << 16) | (uint64_t{0x1f} << 8) | 7);
  const auto base = pci_bus_key("0000:1b:00.0");
  EXPECT_NE(pci_bus_key("0000:1c:00.0"), base);      // bus
  EXPECT_NE(pci_bus_key("0000:1b:01.0"), base);      // device
  EXPECT_NE(pci_bus_key("0000:1b:00.1"), base);      // function
  EXPECT_NE(pci_bus_key("00000001:1B:00.0"), base);  // domain
  EXPECT_EQ(pci_bus_key("00010000:1B:00.0"), pci_bus_key("10000:1b:00.0"));
}

TEST(PciBusKey, MalformedIdsHaveNoKey) {
  for (const char* id :
       {"", "1B:00.0", "000:1b:00.0", "000000000:1B:00.0", "0000:1b:00", "0000:1b:00.",
        "0000:1b:00.0 ", " 0000:1b:00.0", "0000:1g:00.0", "0000:1b:20.0", "0000:1b:00.8",
        "0000-1b-00.0", "0000:1b:00.00", "0000:1b:0.0", "0000:b:00.0", "GPU-0000:1b:00.0"})
    EXPECT_FALSE(pci_bus_key(id).has_value()) << '"' << id << '"';
}

TEST(MatchCudaDevices, EachNvmlGpuFindsItsCudaOrdinal) {
  // CUDA_VISIBLE_DEVICES=3,0,2: CUDA's ordinals in that order, NVML's second GPU hidden.
  const std::vector<std::string> nvml = {"00000000:19:00.0", "00000000:3B:00.0", "00000000:4C:00.0",
                                         "00000000:5D:00.0"};
  const std::vector<std::string> cuda = {"0000:5d:00.0", "0000:19:00.0", "0000:4c:00.0"};
  const std::vector<std::optional<int>> want = {1, std::nullopt, 2, 0};
  EXPECT_EQ(match_cuda_devices(nvml, cuda), want);
}

TEST(MatchCudaDevices, MalformedIdsMatchNothing) {
  const std::vector<std::string> nvml = {"00000000:19:00.0", "not a bus id", "00000000:3B:00.0"};
  const std::vector<std::string> cuda = {"0000:19:00.0", "garbage", "0000:3b:00.0"};
  const std::vector<std::optional<int>> want = {0, std::nullopt, 2};
  EXPECT_EQ(match_cuda_devices(nvml, cuda), want);
  // No CUDA device at all: every NVML GPU is hidden, one entry each.
  const std::vector<std::optional<int>> none = {std::nullopt, std::nullopt, std::nullopt};
  EXPECT_EQ(match_cuda_devices(nvml, {}), none);
  EXPECT_TRUE(match_cuda_devices({}, cuda).empty());
}

// ---- Memory test ---------------------------------------------------------------------

MemtestSummary clean(size_t free_bytes, size_t tested_bytes) {
  MemtestSummary m;
  m.free_bytes = free_bytes;
  m.tested_bytes = tested_bytes;
  m.seconds = 42;
  return m;
}

TEST(JudgeMemtest, NoErrorOverNinetyPercentPasses) {
  constexpr size_t kGiB = size_t{1} << 30;
  const TestVerdict t = judge_memtest(clean(80 * kGiB, 72 * kGiB));  // exactly 90 %
  EXPECT_EQ(t.test, "memtest");
  EXPECT_EQ(t.status, Status::kPass) << t.reason;
  EXPECT_EQ(t.reason, "no error in 72 GiB tested of 80 GiB free (90.0 %) in 42 s");
  EXPECT_TRUE(has(t.threshold, "at least 90 % of free memory")) << t.threshold;
  EXPECT_EQ(t.source, kDcgmDiag);
  expect_complete(t);
}

TEST(JudgeMemtest, BelowNinetyPercentWarnsAtTheEdge) {
  const size_t free_bytes = 10'000'000'000;
  const TestVerdict low = judge_memtest(clean(free_bytes, 8'990'000'000));  // 89.9 %
  EXPECT_EQ(low.status, Status::kWarn);
  EXPECT_TRUE(has(low.reason, "(89.9 %)")) << low.reason;
  EXPECT_TRUE(has(low.reason, "less than 90 % of free memory")) << low.reason;
  // One byte short of 90 % still warns, and does not read as 90.0 %.
  const TestVerdict short_by_one = judge_memtest(clean(free_bytes, 8'999'999'999));
  EXPECT_EQ(short_by_one.status, Status::kWarn);
  EXPECT_TRUE(has(short_by_one.reason, "(89.9 %)")) << short_by_one.reason;
  EXPECT_EQ(judge_memtest(clean(free_bytes, 9'000'000'000)).status, Status::kPass);
  expect_complete(low);
}

TEST(JudgeMemtest, NothingKnownOfFreeMemoryNeverPasses) {
  const TestVerdict t = judge_memtest(clean(0, 1 << 20));
  EXPECT_EQ(t.status, Status::kWarn);
  EXPECT_TRUE(has(t.reason, "free memory is not known")) << t.reason;
  EXPECT_EQ(judge_memtest(clean(1 << 30, 0)).status, Status::kWarn);
}

TEST(JudgeMemtest, OwnFractionAndTestName) {
  const TestVerdict t = judge_memtest(clean(1000, 600), "sustained.memtest", 0.5);
  EXPECT_EQ(t.test, "sustained.memtest");
  EXPECT_EQ(t.status, Status::kPass);
  EXPECT_TRUE(has(t.threshold, "at least 50 % of free memory")) << t.threshold;
  EXPECT_EQ(judge_memtest(clean(1000, 400), "sustained.memtest", 0.5).status, Status::kWarn);
}

TEST(JudgeMemtest, RoundsUnderLoadNameTheirCountAndTheLeastCoverage) {
  MemtestSummary m = clean(80ull << 30, 72ull << 30);
  m.rounds = 17;
  m.seconds = 120;
  const TestVerdict t = judge_memtest(m, "sustained.memtest");
  EXPECT_EQ(t.status, Status::kPass) << t.reason;
  EXPECT_EQ(t.reason,
            "no error in 17 round(s), the least covering 72 GiB tested of 80 GiB free (90.0 %) "
            "in 120 s");
  m.tested_bytes = 8ull << 30;  // one round left too little beside the GEMMs
  EXPECT_EQ(judge_memtest(m, "sustained.memtest").status, Status::kWarn);
}

TEST(JudgeMemtest, AnyErrorFailsWithCountAddressesAndBits) {
  MemtestSummary m = clean(10'000'000'000, 5'000'000'000);  // 50 %: a failure still fails
  m.errors = 3;
  m.ranges = {{0x7f1234000100, 0x7f1234000104, 2, 0x100, true, false},
              {0x7f1300000000, 0x7f1300000000, 1, 0x80000000, false, true}};
  const TestVerdict t = judge_memtest(m);
  EXPECT_EQ(t.status, Status::kFail);
  EXPECT_TRUE(has(t.reason, "3 word(s) did not hold what was written")) << t.reason;
  EXPECT_TRUE(has(t.reason,
                  "0x7f1234000100-0x7f1234000107: 2 words, bits 0x00000100 (read 1 for 0); "
                  "0x7f1300000000-0x7f1300000003: 1 word, bits 0x80000000 (read 0 for 1)"))
      << t.reason;
  EXPECT_FALSE(has(t.reason, "more range")) << t.reason;
  EXPECT_FALSE(has(t.reason, "recorded")) << t.reason;
  EXPECT_EQ(t.source, kDcgmDiag);
  expect_complete(t);
}

TEST(JudgeMemtest, ManyRangesAreCountedAndATruncatedRecordSaysSo) {
  MemtestSummary m = clean(1000, 950);
  m.errors = 5000;
  m.truncated = true;
  for (uint64_t i = 0; i < 5; ++i)
    m.ranges.push_back({0x1000 * (i + 1) * 16, 0x1000 * (i + 1) * 16, 1, 1, true, false});
  const TestVerdict t = judge_memtest(m);
  EXPECT_EQ(t.status, Status::kFail);
  EXPECT_TRUE(has(t.reason, "5000 word(s)")) << t.reason;
  EXPECT_TRUE(has(t.reason, "0x10000-0x10003")) << t.reason;
  EXPECT_TRUE(has(t.reason, "0x30000-0x30003")) << t.reason;
  EXPECT_FALSE(has(t.reason, "0x40000-")) << t.reason;  // only the first three are named
  EXPECT_TRUE(has(t.reason, "and 2 more range(s)")) << t.reason;
  EXPECT_TRUE(has(t.reason, "and 2 more range(s); only the first 5 word(s) recorded")) << t.reason;
}

TEST(JudgeMemtest, ErrorsWithoutRecordedAddressesStillFail) {
  MemtestSummary m = clean(1000, 950);
  m.errors = 7;
  m.truncated = true;
  const TestVerdict t = judge_memtest(m);
  EXPECT_EQ(t.status, Status::kFail);
  EXPECT_TRUE(has(t.reason, "7 word(s)")) << t.reason;
  EXPECT_TRUE(has(t.reason, "no address recorded")) << t.reason;
}

// ---- GEMM consistency ----------------------------------------------------------------

GemmRunFigures gpu(int index, double tflops, std::vector<uint64_t> hashes = {42, 42, 42}) {
  return {index, "H200", "bf16", std::move(hashes), tflops * 1e12};
}

const TestVerdict& find(const std::vector<TestVerdict>& tests, const std::string& id) {
  for (const TestVerdict& t : tests)
    if (t.test == id) return t;
  throw std::runtime_error("no test " + id);
}

TEST(JudgeGemm, RepeatableMatchingAndNotSlowPassesAllThree) {
  const auto node = judge_node({gpu(0, 800), gpu(1, 790), gpu(2, 806), gpu(3, 810)});
  const auto v = judge_gemm(node[1], true, "D within tolerance at 12 sampled rows");
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0].test, "gemm.bf16.result");
  EXPECT_EQ(v[1].test, "gemm.bf16.repeatable");
  EXPECT_EQ(v[2].test, "gemm.bf16.node");
  for (const TestVerdict& t : v) {
    EXPECT_EQ(t.status, Status::kPass) << t.test << ": " << t.reason;
    EXPECT_EQ(t.source, kDcgmDiag);
    expect_complete(t);
  }
  EXPECT_TRUE(has(v[0].reason, "D within tolerance at 12 sampled rows")) << v[0].reason;
  EXPECT_TRUE(has(v[2].reason, "other 3 GPU(s)")) << v[2].reason;
  EXPECT_TRUE(has(v[2].reason, "803 TFLOP/s")) << v[2].reason;  // the median of the four
}

TEST(JudgeGemm, DifferentBitsBetweenRunsFailRepeatable) {
  const auto node = judge_node({gpu(0, 800), gpu(1, 800, {42, 43, 42}), gpu(2, 800)});
  const auto v = judge_gemm(node[1], true, "");
  EXPECT_EQ(find(v, "gemm.bf16.result").status, Status::kPass);
  const TestVerdict& rep = find(v, "gemm.bf16.repeatable");
  EXPECT_EQ(rep.status, Status::kFail);
  EXPECT_TRUE(has(rep.reason, "different bits on repeated runs")) << rep.reason;
  // Its first run agrees with the node's bits.
  EXPECT_EQ(find(v, "gemm.bf16.node").status, Status::kPass);
}

TEST(JudgeGemm, BitsDifferentFromTheNodeFailNode) {
  const auto node = judge_node({gpu(0, 800), gpu(1, 800), gpu(2, 800, {7, 7, 7})});
  const auto v = judge_gemm(node[2], true, "");
  EXPECT_EQ(find(v, "gemm.bf16.repeatable").status, Status::kPass);
  const TestVerdict& n = find(v, "gemm.bf16.node");
  EXPECT_EQ(n.status, Status::kFail);
  EXPECT_TRUE(has(n.reason, "bits differ from the other 2 H200(s)")) << n.reason;
  EXPECT_EQ(find(judge_gemm(node[0], true, ""), "gemm.bf16.node").status, Status::kPass);
}

TEST(JudgeGemm, EightPercentBelowTheNodeMedianFails) {
  const auto node = judge_node({gpu(0, 800), gpu(1, 800), gpu(2, 736), gpu(3, 800)});
  const auto v = judge_gemm(node[2], true, "");
  const TestVerdict& n = find(v, "gemm.bf16.node");
  EXPECT_EQ(n.status, Status::kFail);
  EXPECT_TRUE(has(n.reason, "736.0 TFLOP/s")) << n.reason;
  EXPECT_TRUE(has(n.reason, "median 800.0")) << n.reason;
  EXPECT_TRUE(has(n.reason, "8.0 % below")) << n.reason;
  EXPECT_TRUE(has(n.reason, "limit 5 %")) << n.reason;
  EXPECT_TRUE(has(n.threshold, "more than 5 % below the node's median")) << n.threshold;
  EXPECT_EQ(find(v, "gemm.bf16.result").status, Status::kPass);
  EXPECT_EQ(find(v, "gemm.bf16.repeatable").status, Status::kPass);
  // 3 % below is within the rule.
  const auto close = judge_node({gpu(0, 800), gpu(1, 800), gpu(2, 776), gpu(3, 800)});
  EXPECT_EQ(find(judge_gemm(close[2], true, ""), "gemm.bf16.node").status, Status::kPass);
}

TEST(JudgeGemm, InvalidDFailsResultWithTheValidation) {
  const auto node = judge_node({gpu(0, 800), gpu(1, 800)});
  const auto v = judge_gemm(node[0], false, "row 17: 3 elements outside the bound");
  const TestVerdict& r = find(v, "gemm.bf16.result");
  EXPECT_EQ(r.status, Status::kFail);
  EXPECT_EQ(r.reason,
            "bf16 GEMM D does not match its FP64 reference: row 17: 3 elements "
            "outside the bound");
  EXPECT_EQ(find(v, "gemm.bf16.repeatable").status, Status::kPass);
  EXPECT_EQ(find(v, "gemm.bf16.node").status, Status::kPass);
}

TEST(JudgeGemm, ALoneGpuPassesWithNothingToCompare) {
  GemmRunFigures f = gpu(0, 500);
  f.precision = "fp32";
  const auto node = judge_node({f});
  const auto v = judge_gemm(node[0], true, "");
  const TestVerdict& n = find(v, "gemm.fp32.node");
  EXPECT_EQ(n.status, Status::kPass);
  EXPECT_TRUE(has(n.reason, "the only GPU of its model")) << n.reason;
  EXPECT_EQ(find(v, "gemm.fp32.result").reason, "fp32 GEMM D matches its FP64 reference");
}

TEST(JudgeGemm, AVerdictWithoutReasonStillSaysWhichRuleFailed) {
  GemmNodeVerdict node;
  node.precision = "bf16";
  node.repeatable = true;
  node.matches_node = false;
  node.slow = true;
  node.median_flops = 800e12;
  node.peers = 4;
  const auto v = judge_gemm(node, true, "");
  const TestVerdict& n = find(v, "gemm.bf16.node");
  EXPECT_EQ(n.status, Status::kFail);
  EXPECT_EQ(n.reason,
            "bf16 GEMM bits differ from the other 3 GPU(s) of its model; bf16 GEMM more than 5 % "
            "below the node's median 800 TFLOP/s");
}

// ---- PCIe rates ----------------------------------------------------------------------

TEST(PcieBytesPerS, EachGenerationsRateAndEncoding) {
  const double gen5_x16 = 32e9 * 16 * 128 / 130 / 8;
  EXPECT_NEAR(gen5_x16, 63.015e9, 1e6);
  EXPECT_DOUBLE_EQ(*pcie_bytes_per_s(5, 16), gen5_x16);
  EXPECT_DOUBLE_EQ(*pcie_bytes_per_s(4, 16), gen5_x16 / 2);
  EXPECT_DOUBLE_EQ(*pcie_bytes_per_s(1, 1), 2.5e9 * 0.8 / 8);
  EXPECT_DOUBLE_EQ(*pcie_bytes_per_s(2, 8), 4e9);
  EXPECT_DOUBLE_EQ(*pcie_bytes_per_s(3, 16), 8e9 * 16 * 128 / 130 / 8);
  EXPECT_DOUBLE_EQ(*pcie_bytes_per_s(6, 16), 64e9 * 16 * 242 / 256 / 8);
  EXPECT_DOUBLE_EQ(*pcie_bytes_per_s(5, 8), gen5_x16 / 2);
}

TEST(PcieBytesPerS, UnknownGenerationOrWidthHasNoRate) {
  EXPECT_FALSE(pcie_bytes_per_s(0, 16).has_value());
  EXPECT_FALSE(pcie_bytes_per_s(7, 16).has_value());
  EXPECT_FALSE(pcie_bytes_per_s(-1, 16).has_value());
  EXPECT_FALSE(pcie_bytes_per_s(5, 0).has_value());
  EXPECT_FALSE(pcie_bytes_per_s(5, -4).has_value());
}

// ---- Bandwidth floors ----------------------------------------------------------------

constexpr const char* kHbmFrom = "0.80 x the H200 datasheet's 4.80 TB/s";
constexpr const char* kHbmSource = "NVIDIA H200 datasheet; docs/check.md";
const double kHbmFloor = kHbmFloorFactor * 4.8e12;

TEST(JudgeFloor, HbmAtTheFloorPassesJustBelowFails) {
  const TestVerdict at = judge_floor("hbm.bandwidth", kHbmFloor, kHbmFloor, kHbmFrom, kHbmSource);
  EXPECT_EQ(at.status, Status::kPass) << at.reason;
  const TestVerdict below =
      judge_floor("hbm.bandwidth", std::nextafter(kHbmFloor, 0.0), kHbmFloor, kHbmFrom, kHbmSource);
  EXPECT_EQ(below.status, Status::kFail) << below.reason;
  const TestVerdict close =
      judge_floor("hbm.bandwidth", 3.8399e12, kHbmFloor, kHbmFrom, kHbmSource);
  EXPECT_EQ(close.status, Status::kFail);
  // Digits enough to tell the two apart.
  EXPECT_EQ(close.reason, "3.8399 TB/s measured, below the floor of 3.8400 TB/s");
}

TEST(JudgeFloor, ReasonThresholdAndSource) {
  const TestVerdict ok = judge_floor("hbm.bandwidth", 4.01e12, kHbmFloor, kHbmFrom, kHbmSource);
  EXPECT_EQ(ok.test, "hbm.bandwidth");
  EXPECT_EQ(ok.status, Status::kPass);
  EXPECT_EQ(ok.reason, "4.01 TB/s measured, at or above the floor of 3.84 TB/s");
  EXPECT_EQ(ok.threshold,
            "at least 3.84 TB/s (0.80 x the H200 datasheet's 4.80 TB/s): fail below, pass at or "
            "above");
  EXPECT_EQ(ok.source, kHbmSource);
  expect_complete(ok);
  const TestVerdict bad = judge_floor("hbm.bandwidth", 3.83e12, kHbmFloor, kHbmFrom, kHbmSource);
  EXPECT_EQ(bad.status, Status::kFail);
  EXPECT_EQ(bad.reason, "3.83 TB/s measured, below the floor of 3.84 TB/s");
}

TEST(JudgeFloor, HostLinkAgainstSeventyPercentOfPcie) {
  const double floor = kHostFloorFactor * *pcie_bytes_per_s(5, 16);
  const char* from = "0.70 x PCIe gen 5 x16's 63.0 GB/s";
  const TestVerdict ok = judge_floor("host.h2d", 55.1e9, floor, from, "gpuvs rule");
  EXPECT_EQ(ok.status, Status::kPass);
  EXPECT_EQ(ok.reason, "55.1 GB/s measured, at or above the floor of 44.1 GB/s");
  const TestVerdict slow = judge_floor("host.d2h", 40e9, floor, from, "gpuvs rule");
  EXPECT_EQ(slow.test, "host.d2h");
  EXPECT_EQ(slow.status, Status::kFail);
  EXPECT_EQ(slow.reason, "40.0 GB/s measured, below the floor of 44.1 GB/s");
}

TEST(JudgeFloor, AMissingFigureSkipsNeverPasses) {
  const TestVerdict no_measure =
      judge_floor("hbm.bandwidth", std::nullopt, kHbmFloor, kHbmFrom, kHbmSource);
  EXPECT_EQ(no_measure.status, Status::kSkip);
  EXPECT_EQ(no_measure.reason, "the bandwidth was not measured");
  expect_complete(no_measure);

  const TestVerdict no_floor = judge_floor("hbm.bandwidth", 4.01e12, std::nullopt,
                                           "no datasheet figure for this GPU", kHbmSource);
  EXPECT_EQ(no_floor.status, Status::kSkip);
  EXPECT_EQ(
      no_floor.reason,
      "no floor is known for this GPU (no datasheet figure for this GPU); 4.01 TB/s measured");
  expect_complete(no_floor);

  EXPECT_EQ(judge_floor("hbm.bandwidth", std::nullopt, std::nullopt, "", "").status, Status::kSkip);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(judge_floor("hbm.bandwidth", nan, kHbmFloor, kHbmFrom, kHbmSource).status,
            Status::kSkip);
  EXPECT_EQ(judge_floor("hbm.bandwidth", 4.01e12, nan, kHbmFrom, kHbmSource).status, Status::kSkip);
  EXPECT_EQ(judge_floor("hbm.bandwidth", 4.01e12, 0.0, kHbmFrom, kHbmSource).status, Status::kSkip);
  // 0 B/s is a measurement, and fails.
  EXPECT_EQ(judge_floor("hbm.bandwidth", 0.0, kHbmFloor, kHbmFrom, kHbmSource).status,
            Status::kFail);
}

// ---- Sustained load ------------------------------------------------------------------

// An H200 under BF16 load for 60 s: capped at its 700 W limit, a steady clock.
std::vector<LoadSample> capped_run() {
  std::vector<LoadSample> out;
  for (int i = 0; i < 600; ++i) {
    LoadSample s;
    s.t_s = 0.1 * i;
    s.power_w = 695;
    s.sm_mhz = 1500 + (i % 2) * 50;
    s.temperature_c = 62;
    s.reasons = {"sw_power_cap"};
    out.push_back(s);
  }
  return out;
}

TEST(JudgeSustainedLoad, APowerCappedPassNotesTheCap) {
  const SustainedVerdict sv = judge_sustained(capped_run(), 700);
  ASSERT_TRUE(sv.pass);
  const auto v = judge_sustained_load(sv, 60, 7.5e14);
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].test, "sustained.load");
  EXPECT_EQ(v[0].status, Status::kPass);
  EXPECT_TRUE(has(v[0].reason, "60 s under load: median power 695 W")) << v[0].reason;
  EXPECT_TRUE(has(v[0].reason, "SM clock 1500-1550 MHz")) << v[0].reason;
  EXPECT_TRUE(has(v[0].reason, "at most 62 °C")) << v[0].reason;
  EXPECT_TRUE(has(v[0].reason, "power-capped (sw_power_cap): normal at full load")) << v[0].reason;
  EXPECT_TRUE(has(v[0].threshold, "at least 90 % of the enforced limit")) << v[0].threshold;
  EXPECT_EQ(v[1].test, "sustained.rate");
  EXPECT_EQ(v[1].status, Status::kPass);
  EXPECT_EQ(v[1].reason, "mean GEMM rate 750 TFLOP/s over 60 s");
  for (const TestVerdict& t : v) {
    EXPECT_EQ(t.source, kDcgmPower);
    expect_complete(t);
  }
}

TEST(JudgeSustainedLoad, AFailListsEveryFailure) {
  std::vector<LoadSample> samples = capped_run();
  for (LoadSample& s : samples)
    s.power_w = 500;  // 71 % of the limit
  samples[400].reasons.push_back("hw_slowdown");
  const SustainedVerdict sv = judge_sustained(samples, 700);
  ASSERT_EQ(sv.failures.size(), 2u);
  const auto v = judge_sustained_load(sv, 60, 7.5e14);
  EXPECT_EQ(v[0].status, Status::kFail);
  EXPECT_EQ(v[0].reason, sv.failures[0] + "; " + sv.failures[1]);
  EXPECT_TRUE(has(v[0].reason, "hw_slowdown")) << v[0].reason;
  EXPECT_TRUE(has(v[0].reason, "median power 500 W under load is below 90 %")) << v[0].reason;
  // The rate is a figure, passed whatever the load's verdict.
  EXPECT_EQ(v[1].status, Status::kPass);
}

TEST(JudgeSustainedLoad, AnUnknownRateSkips) {
  const SustainedVerdict sv = judge_sustained(capped_run(), 700);
  const auto v = judge_sustained_load(sv, 60, std::nullopt);
  EXPECT_EQ(v[1].status, Status::kSkip);
  EXPECT_EQ(v[1].reason, "the GEMM rate under the load was not measured");
  EXPECT_EQ(judge_sustained_load(sv, 60, 0.0)[1].status, Status::kSkip);
}

TEST(JudgeSustainedLoad, NoSamplesFails) {
  const SustainedVerdict sv = judge_sustained({}, 700);
  const auto v = judge_sustained_load(sv, 0, std::nullopt);
  EXPECT_EQ(v[0].status, Status::kFail);
  EXPECT_TRUE(has(v[0].reason, "no power samples")) << v[0].reason;
}

}  // namespace
}  // namespace gpuvs::check
