// Compute peaks: per-SM rates against the whitepapers; the FMA chains against the CPU
// for every precision (and the check's sensitivity to wrong work or values); every
// GEMM precision's validation passing on a real GEMM and failing on corrupted output,
// wrong scales and unwritten elements; the unsupported-precision path; and the three
// compute benchmarks once each with a tiny budget. No speed is asserted (docs/design.md):
// only that no figure exceeds the hardware's rate at the measured clock.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "bench/benchmarks.h"
#include "bench/compute/arch_rates.h"
#include "bench/compute/fma_kernels.h"
#include "bench/compute/gemm_check.h"
#include "bench/compute/gemm_runner.h"
#include "bench/compute/roofline_kernels.h"
#include "gpu/check.h"
#include "gpu/device.h"
#include "gpu/probe.h"
#include "gpu_test_util.h"

namespace gpuvs {
namespace {

// No figure may beat the hardware at the clock it ran: that would mean miscounted work.
void expect_physical(const Result& r) {
  if (r.efficiency_at_clock) {
    EXPECT_GT(*r.efficiency_at_clock, 0) << r.id;
    EXPECT_LT(*r.efficiency_at_clock, 1.05) << r.id << " beats the peak at its own clock";
    ASSERT_TRUE(r.peak_at_clock.has_value());
    EXPECT_NEAR(*r.efficiency_at_clock * *r.peak_at_clock, r.value, 1e-6 * r.value);
  }
}

TEST(ArchRates, HopperAndAmpereReproduceTheWhitepapers) {
  const auto peak = [](ArithRate rate, std::string_view cc, int sms, double mhz) {
    return sms * arith_rate(rate, cc)->per_clock_per_sm * mhz * 1e6;
  };
  EXPECT_NEAR(peak(ArithRate::kTensorBf16, "9.0", 132, 1830), 989.4e12, 0.1e12);
  EXPECT_NEAR(peak(ArithRate::kTensorFp8, "9.0", 132, 1830), 1978.9e12, 0.1e12);
  EXPECT_NEAR(peak(ArithRate::kTensorInt8, "9.0", 132, 1830), 1978.9e12, 0.1e12);
  EXPECT_NEAR(peak(ArithRate::kTensorTf32, "9.0", 132, 1830), 494.7e12, 0.1e12);
  EXPECT_NEAR(peak(ArithRate::kTensorFp64, "9.0", 132, 1980), 66.9e12, 0.1e12);
  EXPECT_NEAR(peak(ArithRate::kFp32Fma, "9.0", 132, 1980), 66.9e12, 0.1e12);
  EXPECT_NEAR(peak(ArithRate::kFp64Fma, "9.0", 132, 1980), 33.5e12, 0.1e12);
  EXPECT_NEAR(peak(ArithRate::kInt32Mad, "9.0", 132, 1980), 33.5e12, 0.1e12);
  EXPECT_NEAR(peak(ArithRate::kTensorBf16, "8.0", 108, 1410), 312e12, 0.2e12);
  EXPECT_NEAR(peak(ArithRate::kFp16x2Fma, "8.0", 108, 1410), 78e12, 0.1e12);
  EXPECT_FALSE(arith_rate(ArithRate::kTensorFp8, "8.0").has_value()) << "A100 has no FP8";
  EXPECT_FALSE(arith_rate(ArithRate::kTensorBf16, "8.9").has_value()) << "not guessed";
  EXPECT_EQ(compute_capability_x10("9.0"), 90);
  EXPECT_EQ(compute_capability_x10("10.0"), 100);
  EXPECT_EQ(compute_capability_x10("8.9"), 89);
  EXPECT_EQ(compute_capability_x10("x"), 0);
}

TEST(ArchRates, PeakAtClockUsesTheMedianClockAndOnlyOkResults) {
  GpuInfo gpu;
  gpu.compute_capability = "9.0";
  gpu.sm_count = 132;
  Result r;
  r.value = 750e12;
  r.clocks = ClockRecord{};
  r.clocks->sm_mhz_median = 1500;
  apply_peak_at_clock(r, ArithRate::kTensorBf16, gpu);
  ASSERT_TRUE(r.peak_at_clock.has_value());
  EXPECT_DOUBLE_EQ(*r.peak_at_clock, 132.0 * 4096 * 1500e6);
  EXPECT_DOUBLE_EQ(*r.efficiency_at_clock, 750e12 / (132.0 * 4096 * 1500e6));
  const std::optional<Peak> nominal = derived_peak(ArithRate::kTensorBf16, gpu, 1980, "FLOP/s");
  ASSERT_TRUE(nominal.has_value());
  EXPECT_EQ(nominal->kind, "derived");
  EXPECT_DOUBLE_EQ(nominal->value, 132.0 * 4096 * 1980e6);
  EXPECT_NE(nominal->source.find("whitepaper"), std::string::npos) << nominal->source;
  r.status = Status::kInvalid;
  apply_peak_at_clock(r, ArithRate::kTensorBf16, gpu);
  EXPECT_FALSE(r.peak_at_clock.has_value());
  EXPECT_FALSE(r.efficiency_at_clock.has_value());
}

TEST(GemmSupport, Fp8NeedsAdaAndInt8NeedsTuring) {
  EXPECT_FALSE(gemm_unsupported_reason(GemmPrecision::kFp8E4m3, "9.0").has_value());
  EXPECT_FALSE(gemm_unsupported_reason(GemmPrecision::kFp8E5m2, "8.9").has_value());
  const auto why = gemm_unsupported_reason(GemmPrecision::kFp8E4m3, "8.0");
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("8.9"), std::string::npos) << *why;
  EXPECT_NE(why->find("8.0"), std::string::npos) << *why;
  EXPECT_TRUE(gemm_unsupported_reason(GemmPrecision::kInt8, "7.0").has_value());
  EXPECT_FALSE(gemm_unsupported_reason(GemmPrecision::kFp64, "7.0").has_value());
  EXPECT_EQ(gemm_precisions().size(), 8u);
}

TEST(Fma, EveryPrecisionMatchesTheCpuAndTheCheckIsSensitive) {
  GPUVS_REQUIRE_GPU();
  Stream stream;
  // One round: the halves' chains stop moving after ~30-100 steps (fma_kernels.h).
  const int blocks = 3;
  const int64_t outer = 1, steps = outer * kFmaUnroll;
  const size_t threads = size_t{blocks} * kFmaBlock;
  DeviceBuffer out(threads * sizeof(double));
  for (FmaType t :
       {FmaType::kFp64, FmaType::kFp32, FmaType::kFp16x2, FmaType::kBf16x2, FmaType::kInt32}) {
    SCOPED_TRACE(static_cast<int>(t));
    const FmaChain chain = fma_chain(t, steps);
    launch_fma(t, out.as<double>(), blocks, outer, chain, stream.get());
    std::vector<double> host(threads);
    GPUVS_CUDA_CHECK(
        cudaMemcpyAsync(host.data(), out.get(), out.bytes(), cudaMemcpyDeviceToHost, stream.get()));
    stream.synchronize();
    const double tol = fma_tolerance(t);
    size_t bad = 0, exact = 0, sensitive = 0;
    for (size_t tid = 0; tid < threads; ++tid) {
      const double ref = fma_reference(t, uint32_t(tid), steps, chain);
      if (!(std::fabs(host[tid] - ref) <= tol)) ++bad;
      if (host[tid] == ref) ++exact;
      // One round less of work must show.
      if (host[tid] != fma_reference(t, uint32_t(tid), steps - kFmaUnroll, chain)) ++sensitive;
    }
    EXPECT_EQ(bad, 0u);
    // The CPU model of the halves is exact too; the benchmark's tolerance is a margin.
    EXPECT_EQ(exact, threads);
    EXPECT_GT(sensitive, threads * 9 / 10);
    // A wrong value is caught.
    EXPECT_GT(std::fabs(host[7] + 4 * tol + 1e-3 - fma_reference(t, 7, steps, chain)), tol);
  }
}

TEST(Roofline, StreamingKernelsMatchTheCpu) {
  GPUVS_REQUIRE_GPU();
  Stream stream;
  const size_t n16 = 4096;
  DeviceBuffer x(n16 * 16), y(n16 * 16);
  for (FmaType t : {FmaType::kFp32, FmaType::kFp16x2, FmaType::kBf16x2}) {
    SCOPED_TRACE(static_cast<int>(t));
    const FmaChain chain = fma_chain(t, 1024);
    fill_roofline_input(t, x.get(), n16, stream.get());
    const int k = 37;
    launch_roofline(t, x.get(), y.get(), n16, k, chain, stream.get());
    std::vector<unsigned char> host(n16 * 16);
    GPUVS_CUDA_CHECK(
        cudaMemcpyAsync(host.data(), y.get(), host.size(), cudaMemcpyDeviceToHost, stream.get()));
    stream.synchronize();
    const size_t elements = n16 * (t == FmaType::kFp32 ? 4 : 8);
    const double tol = fma_tolerance(t) / (kFmaAccumulators * 2.0);
    size_t bad = 0;
    for (size_t e = 0; e < elements; ++e) {
      double got;
      if (t == FmaType::kFp32) {
        float f;
        std::memcpy(&f, host.data() + 4 * e, 4);
        got = f;
      } else {
        uint16_t h;
        std::memcpy(&h, host.data() + 2 * e, 2);
        if (t == FmaType::kFp16x2) {
          __half_raw raw;
          raw.x = h;
          got = __half2float(__half(raw));
        } else {
          __nv_bfloat16_raw raw;
          raw.x = h;
          got = __bfloat162float(__nv_bfloat16(raw));
        }
      }
      const double ref = fma_chain_reference(t, fma_initial(uint32_t(e), 0), k, chain);
      if (!(std::fabs(got - ref) <= tol)) ++bad;
    }
    EXPECT_EQ(bad, 0u);
  }
}

class GemmPrecisions : public ::testing::TestWithParam<GemmPrecision> {};

TEST_P(GemmPrecisions, ValidationPassesOnARealGemmAndCatchesBadOutput) {
  GPUVS_REQUIRE_GPU();
  const SystemInfo system = probe_system();
  const GemmPrecision p = GetParam();
  if (auto why = gemm_unsupported_reason(p, system.gpus[0].compute_capability))
    GTEST_SKIP() << *why;
  LtHandle handle;
  Stream stream;
  const GemmShape shape{512, 384, 256};
  GemmRunner runner(p, shape, handle, stream.get());
  const std::optional<GemmAlgo> algo = runner.choose(shape, 2, tiny_options(), steady_wall_clock());
  ASSERT_TRUE(algo.has_value()) << "cuBLASLt has no algorithm";
  EXPECT_GE(algo->tried, 1);

  const GemmCheck good = runner.run_and_check(*algo);
  EXPECT_TRUE(good.passed) << describe_check(good, runner.types().tolerance);
  EXPECT_EQ(good.elements_checked, int64_t{good.sampled_rows} * 384 + good.sampled_cols * 512);
  EXPECT_EQ(good.sampled_rows, 8);
  EXPECT_EQ(good.checksums_checked, 512 + 384);
  EXPECT_LT(good.worst_ratio, 1.0);

  // A wrong scale (a systematic error of 25 %) fails the sampled elements.
  GemmView wrong = runner.view(shape);
  wrong.scale *= 1.25;
  const GemmCheck scaled = check_gemm(wrong, runner.types().tolerance, stream.get());
  EXPECT_FALSE(scaled.passed);
  EXPECT_GT(scaled.element_failures, 0);

  // One element overwritten with 0x7F bytes (huge or NaN in every type) fails the
  // checksums of its row and column, wherever it is.
  const size_t bytes = elem_bytes(runner.types().d);
  const int64_t i = 300, j = 200;
  GPUVS_CUDA_CHECK(cudaMemsetAsync(static_cast<char*>(runner.d()) + (i + j * 512) * bytes, 0x7F,
                                   bytes, stream.get()));
  const GemmCheck corrupted = runner.check(shape);
  EXPECT_FALSE(corrupted.passed);
  EXPECT_GE(corrupted.checksum_failures, 2);

  // Poisoned and never written: every checked element fails.
  fill_poison(runner.d(), runner.types().d, 512 * 384, stream.get());
  const GemmCheck unwritten = runner.check(shape);
  EXPECT_FALSE(unwritten.passed);
  // (INT8's poison, -1, could equal a true element: allow a handful.)
  EXPECT_GT(unwritten.element_failures, unwritten.elements_checked * 99 / 100);
  EXPECT_EQ(unwritten.first_bad_row, 0);
  EXPECT_EQ(unwritten.first_bad_col, 0);
}

INSTANTIATE_TEST_SUITE_P(Compute, GemmPrecisions, ::testing::ValuesIn(gemm_precisions()),
                         [](const auto& info) { return std::string(gemm_types(info.param).name); });

TEST(Gemm, UnsupportedPrecisionIsAResultNotAnError) {
  GPUVS_REQUIRE_GPU();
  const SystemInfo system = probe_system();
  BenchContext ctx{system, 0,       tiny_options(), true,    steady_wall_clock(),
                   {0},    nullptr, nullptr,        nullptr, {}};
  GemmBenchOptions o;
  o.precisions = {GemmPrecision::kFp8E4m3, GemmPrecision::kFp8E5m2, GemmPrecision::kInt8};
  o.standard = {256, 256, 256};
  o.search_best = true;
  o.max_algos = 1;
  o.compute_capability = "7.0";  // a V100: no FP8, no INT8 tensor cores
  const std::vector<Result> results = run_gemm_bench(ctx, o);
  ASSERT_EQ(results.size(), 6u);
  for (const Result& r : results) {
    EXPECT_EQ(r.status, Status::kUnsupported) << r.id;
    EXPECT_NE(r.status_reason.find("needs compute capability"), std::string::npos)
        << r.status_reason;
    EXPECT_EQ(std::get<std::string>(r.parameters.at("layout")), "TN");
  }
  EXPECT_EQ(results[0].id, "compute.gemm.fp8_e4m3");
  EXPECT_EQ(results[1].id, "compute.gemm.fp8_e4m3.best");
  EXPECT_NE(results[0].status_reason.find("8.9"), std::string::npos);
  EXPECT_NE(results[4].status_reason.find("7.5"), std::string::npos);
}

TEST(Gemm, SmallBenchRecordsAlgorithmShapeClockAndPeaks) {
  GPUVS_REQUIRE_GPU();
  const SystemInfo system = probe_system();
  BenchContext ctx{system, 0, tiny_options(), false, steady_wall_clock(), {0}};
  GemmBenchOptions o;
  o.precisions = {GemmPrecision::kBf16, GemmPrecision::kInt8};
  o.standard = {1024, 1024, 1024};
  o.search_best = false;
  o.max_algos = 3;
  o.sustained = true;
  o.preload_s = 0.05;
  const std::vector<Result> results = run_gemm_bench(ctx, o);
  ASSERT_EQ(results.size(), 4u);
  for (const Result& r : results) {
    if (r.status == Status::kUnsupported) continue;
    EXPECT_EQ(r.status, Status::kOk) << r.id << ": " << r.status_reason;
    EXPECT_EQ(std::get<int64_t>(r.parameters.at("m")), 1024);
    EXPECT_EQ(std::get<std::string>(r.parameters.at("layout")), "TN");
    EXPECT_GE(std::get<int64_t>(r.parameters.at("algorithms_tried")), 1);
    EXPECT_LE(std::get<int64_t>(r.parameters.at("algorithms_tried")), 3);
    EXPECT_NE(r.validation.find("FP64 reference"), std::string::npos) << r.validation;
    ASSERT_TRUE(r.clocks.has_value());
    expect_physical(r);
  }
  EXPECT_EQ(results[0].id, "compute.gemm.bf16");
  EXPECT_EQ(results[0].unit, "FLOP/s");
  EXPECT_EQ(results[1].id, "compute.gemm.bf16.sustained");
  EXPECT_EQ(std::get<double>(results[1].parameters.at("preload_s")), 0.05);
  EXPECT_EQ(results[2].id, "compute.gemm.int8");
  EXPECT_EQ(results[2].unit, "OP/s");
  EXPECT_FALSE(results[2].flops_per_iteration.has_value()) << "integer work is not FLOP";
}

TEST(Fma, BenchmarkRunsEveryPrecisionValidated) {
  GPUVS_REQUIRE_GPU();
  const SystemInfo system = probe_system();
  BenchContext ctx{system, 0,       tiny_options(), true,    steady_wall_clock(),
                   {0},    nullptr, nullptr,        nullptr, {}};
  const std::vector<Result> results = bench_entry("compute.fma").run(ctx);
  expect_ids_in_table(results);
  const std::vector<std::string> ids = {"compute.fma.fp64", "compute.fma.fp32",
                                        "compute.fma.fp16x2", "compute.fma.bf16x2",
                                        "compute.fma.int32"};
  ASSERT_EQ(results.size(), ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    const Result& r = results[i];
    EXPECT_EQ(r.id, ids[i]);
    if (r.status == Status::kUnsupported) continue;
    EXPECT_EQ(r.status, Status::kOk) << r.id << ": " << r.status_reason;
    EXPECT_EQ(r.unit, i == 4 ? "OP/s" : "FLOP/s");
    EXPECT_GT(r.value, 0);
    EXPECT_NE(r.validation.find("0 not finite"), std::string::npos) << r.validation;
    expect_physical(r);
  }
}

TEST(Roofline, BenchmarkGivesIncreasingIntensitiesAndRidges) {
  GPUVS_REQUIRE_GPU();
  const SystemInfo system = probe_system();
  BenchContext ctx{system, 0, tiny_options(), false, steady_wall_clock(), {0}};
  const std::vector<Result> results = bench_entry("compute.roofline").run(ctx);
  expect_ids_in_table(results);
  std::set<std::string> ridges;
  std::map<std::string, double> last_intensity;
  for (const Result& r : results) {
    if (r.id.ends_with(".ridge")) {
      ridges.insert(r.id);
      EXPECT_EQ(r.unit, "FLOP/B");
      EXPECT_EQ(r.status, Status::kOk) << r.id << ": " << r.status_reason;
      const double flops = std::get<double>(r.parameters.at("peak_flops"));
      const double bw = std::get<double>(r.parameters.at("bandwidth"));
      EXPECT_DOUBLE_EQ(r.value, flops / bw);
      EXPECT_GT(bw, 1e11);
      continue;
    }
    EXPECT_EQ(r.status, Status::kOk) << r.id << ": " << r.status_reason << " " << r.validation;
    EXPECT_EQ(r.unit, "FLOP/s");
    const double intensity = std::get<double>(r.parameters.at("intensity"));
    EXPECT_DOUBLE_EQ(intensity, *r.flops_per_iteration / *r.bytes_per_iteration);
    EXPECT_DOUBLE_EQ(double(std::get<int64_t>(r.parameters.at("bytes"))), *r.bytes_per_iteration);
    if (last_intensity.count(r.id)) {
      EXPECT_GT(intensity, last_intensity[r.id]) << r.id;
    }
    last_intensity[r.id] = intensity;
  }
  EXPECT_EQ(ridges, (std::set<std::string>{"roofline.fp32.ridge", "roofline.fp16x2.ridge",
                                           "roofline.bf16x2.ridge", "roofline.gemm.bf16.ridge"}));
}

}  // namespace
}  // namespace gpuvs
