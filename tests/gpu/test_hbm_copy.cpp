// The HBM benchmarks end to end on GPU 0 (quick options); every streaming kernel
// variant against the closed forms on a small array; the validators find one
// corrupted element, with the right index.
#include <fmt/format.h>

#include <set>
#include <vector>

#include "bench/benchmarks.h"
#include "bench/common/pattern.h"
#include "bench/common/stream_kernels.h"
#include "gpu/check.h"
#include "gpu/device.h"
#include "gpu/probe.h"
#include "gpu_test_util.h"

namespace gpuvs {
namespace {

TEST(HbmStream, QuickRunIsValidPlausibleAndRecordsClocks) {
  GPUVS_REQUIRE_GPU();
  const SystemInfo system = probe_system();
  BenchContext ctx{system, 0,       quick_options(), true,    steady_wall_clock(),
                   {0},    nullptr, nullptr,         nullptr, {}};
  const std::vector<Result> results = bench_entry("memory.hbm").run(ctx);
  expect_ids_in_table(results);
  ASSERT_EQ(results.size(), 7u);
  const std::vector<std::string> ids = {"memory.hbm.read",  "memory.hbm.write", "memory.hbm.copy",
                                        "memory.hbm.scale", "memory.hbm.add",   "memory.hbm.triad",
                                        "memory.hbm.dot"};
  for (size_t k = 0; k < ids.size(); ++k) {
    const Result& r = results[k];
    SCOPED_TRACE(r.id);
    EXPECT_EQ(r.id, ids[k]);
    EXPECT_EQ(r.status, Status::kOk) << r.status_reason;
    EXPECT_EQ(r.unit, "B/s");
    EXPECT_GT(r.value, 1e11);  // any GPU of the last decade streams faster than 100 GB/s
    if (r.peak) {
      EXPECT_EQ(r.peak->kind, "derived");
      EXPECT_LT(r.value, 1.05 * r.peak->value) << "faster than the memory can go";
    }
    EXPECT_GE(r.stats.samples, 3);
    ASSERT_TRUE(r.clocks.has_value());
    ASSERT_TRUE(r.timing.has_value());
    ASSERT_TRUE(r.parameters.count("variant"));
    ASSERT_TRUE(r.parameters.count("tuning"));
    // The tuning line names every variant with its figure.
    const std::string tuning = std::get<std::string>(r.parameters.at("tuning"));
    for (const StreamVariant& v : stream_variants())
      EXPECT_NE(tuning.find(std::string(v.name)), std::string::npos) << tuning;
  }
  EXPECT_NE(results[0].validation.find("closed form"), std::string::npos) << results[0].validation;
  EXPECT_NE(results[2].validation.find("equal their formula"), std::string::npos)
      << results[2].validation;
  // Copy moves 2 arrays per element, triad 3: the bytes declared say so.
  ASSERT_TRUE(results[2].bytes_per_iteration && results[5].bytes_per_iteration);
  EXPECT_DOUBLE_EQ(*results[5].bytes_per_iteration, 1.5 * *results[2].bytes_per_iteration);
}

// Every (operation, variant) on 1 Mi elements: outputs equal their formula in every
// element, reductions equal the closed form exactly.
TEST(HbmStream, EveryVariantComputesTheRightThing) {
  GPUVS_REQUIRE_GPU();
  const size_t n = size_t{1} << 20;
  DeviceBuffer a(n * 8), b(n * 8), c(n * 8), partials((n / 2 / kStreamBlock + 1) * 8);
  Stream stream;
  init_stream_inputs(a.get(), b.get(), n, stream.get());
  const StreamArrays arrays{a.get(), b.get(), c.get(), partials.as<double>(), n};
  for (const StreamOp op : kStreamOps) {
    for (int v = 0; v < static_cast<int>(stream_variants().size()); ++v) {
      SCOPED_TRACE(fmt::format("{} {}", stream_op_name(op), stream_variants()[v].name));
      fill_doubles(c.get(), n, kStreamPoison, stream.get());
      const StreamShape shape = stream_shape(op, v, n);
      launch_stream(op, v, shape, arrays, stream.get());
      if (stream_reduces(op)) {
        std::vector<double> host(shape.grid);
        stream.synchronize();
        GPUVS_CUDA_CHECK(
            cudaMemcpy(host.data(), partials.get(), host.size() * 8, cudaMemcpyDeviceToHost));
        double sum = 0;
        for (double p : host)
          sum += p;
        EXPECT_EQ(sum, stream_expected_sum(op, n));
      } else {
        const StreamCheck k = check_stream_output(op, c.get(), n, stream.get());
        EXPECT_EQ(k.elements, n);
        EXPECT_EQ(k.mismatches, 0u) << "first bad " << k.first_bad;
      }
    }
  }
}

TEST(HbmStream, OutputCheckFindsOneWrongElement) {
  GPUVS_REQUIRE_GPU();
  const size_t n = size_t{1} << 20;
  DeviceBuffer a(n * 8), b(n * 8), c(n * 8);
  Stream stream;
  init_stream_inputs(a.get(), b.get(), n, stream.get());
  launch_stream(StreamOp::kTriad, 0, stream_shape(StreamOp::kTriad, 0, n),
                {a.get(), b.get(), c.get(), nullptr, n}, stream.get());
  EXPECT_EQ(check_stream_output(StreamOp::kTriad, c.get(), n, stream.get()).mismatches, 0u);
  const size_t bad = 777777;
  const double wrong = 1e9;
  GPUVS_CUDA_CHECK(cudaMemcpy(c.as<double>() + bad, &wrong, 8, cudaMemcpyHostToDevice));
  const StreamCheck k = check_stream_output(StreamOp::kTriad, c.get(), n, stream.get());
  EXPECT_EQ(k.mismatches, 1u);
  EXPECT_EQ(k.first_bad, bad);
}

TEST(StreamValues, ClosedFormsMatchAHostLoop) {
  // The closed forms the benchmark validates against, checked by brute force.
  const size_t n = 3 * kStreamPeriod;
  double read = 0, dot = 0;
  for (size_t i = 0; i < n; ++i) {
    read += stream_a(i);
    dot += stream_a(i) * stream_b(i);
  }
  EXPECT_EQ(stream_expected_sum(StreamOp::kRead, n), read);
  EXPECT_EQ(stream_expected_sum(StreamOp::kDot, n), dot);
  EXPECT_EQ(stream_expected(StreamOp::kTriad, 5), stream_a(5) + 3.0 * stream_b(5));
  // No operation can leave the poison value behind.
  for (const StreamOp op :
       {StreamOp::kWrite, StreamOp::kCopy, StreamOp::kScale, StreamOp::kAdd, StreamOp::kTriad})
    for (uint64_t i = 0; i < kStreamPeriod; ++i)
      ASSERT_NE(stream_expected(op, i), kStreamPoison);
}

TEST(Pattern, CheckFindsOneCorruptedWord) {
  GPUVS_REQUIRE_GPU();
  const size_t bytes = size_t{64} << 20;
  DeviceBuffer buf(bytes);
  Stream stream;
  fill_pattern(buf.get(), bytes, false, stream.get());
  PatternCheck ok = check_pattern(buf.get(), bytes, stream.get());
  EXPECT_EQ(ok.words, bytes / 4);
  EXPECT_EQ(ok.mismatches, 0u);

  const size_t bad_word = 1234567;
  GPUVS_CUDA_CHECK(cudaMemsetAsync(buf.as<uint32_t>() + bad_word, 0x5A, 4, stream.get()));
  const PatternCheck bad = check_pattern(buf.get(), bytes, stream.get());
  EXPECT_EQ(bad.mismatches, 1u);
  EXPECT_EQ(bad.first_bad, bad_word);

  fill_pattern(buf.get(), bytes, /*poison=*/true, stream.get());
  EXPECT_EQ(check_pattern(buf.get(), bytes, stream.get()).mismatches, bytes / 4)
      << "poison must differ from the pattern in every word";
}

TEST(Pattern, HostAndDeviceAgree) {
  GPUVS_REQUIRE_GPU();
  const size_t bytes = size_t{4} << 20;
  DeviceBuffer buf(bytes);
  Stream stream;
  fill_pattern(buf.get(), bytes, false, stream.get());
  std::vector<uint32_t> host(bytes / 4);
  stream.synchronize();
  GPUVS_CUDA_CHECK(cudaMemcpy(host.data(), buf.get(), bytes, cudaMemcpyDeviceToHost));
  EXPECT_EQ(check_pattern_host(host.data(), bytes).mismatches, 0u);
  host[4321] ^= 1;
  const PatternCheck c = check_pattern_host(host.data(), bytes);
  EXPECT_EQ(c.mismatches, 1u);
  EXPECT_EQ(c.first_bad, 4321u);
  fill_pattern_host(host.data(), bytes, /*poison=*/true);
  EXPECT_EQ(check_pattern_host(host.data(), bytes).mismatches, bytes / 4);
}

}  // namespace
}  // namespace gpuvs
