// The host link (PCIe, or C2C on Grace systems): host-to-device, device-to-host and
// both at once, from pageable, pinned and mapped (zero-copy) host memory, against
// transfer size; and whether zero-copy saves link traffic, answered by measurement.
//
// Bytes counted: bytes transferred (both ways at once: the sum of the two).
// Pinned and zero-copy transfers are timed with events; pageable ones on the host's
// clock (the driver stages them through its own pinned buffer on the calling thread,
// which events on the stream do not see). H200 (PCIe Gen5 x16): 54.3 GB/s to and
// 55.2 GB/s from the device, pinned, 1 GiB (nvbandwidth: 55.5); the rest and the
// zero-copy verdict in docs/memory.md.
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <cstring>
#include <map>
#include <thread>
#include <vector>

#include "bench/benchmarks.h"
#include "bench/common/mem_util.h"
#include "bench/common/pattern.h"
#include "bench/common/stream_kernels.h"
#include "bench/host/link_kernels.h"
#include "gpu/check.h"
#include "gpu/device.h"
#include "measure/cuda_timer.h"
#include "suite/produces.h"

namespace gpuvs {

namespace {

constexpr size_t kZeroCopyStudyBytes = size_t{256} << 20;  // the verdict's buffer
constexpr size_t kSparseStride = 4096;                     // one 16-byte read per page

Validation device_check(const void* dst, size_t bytes, cudaStream_t stream) {
  const PatternCheck c = check_pattern(dst, bytes, stream);
  if (c.mismatches == 0)
    return {true,
            fmt::format("all {} words arrived intact in device memory (poisoned before)", c.words)};
  return {false, fmt::format("{} of {} words wrong in device memory, first at word {}",
                             c.mismatches, c.words, c.first_bad)};
}

Validation host_check(const void* dst, size_t bytes) {
  const PatternCheck c = check_pattern_host(dst, bytes);
  if (c.mismatches == 0)
    return {true,
            fmt::format("all {} words arrived intact in host memory (poisoned before)", c.words)};
  return {false, fmt::format("{} of {} words wrong in host memory, first at word {}", c.mismatches,
                             c.words, c.first_bad)};
}

Validation both_checks(const Validation& a, const Validation& b) {
  return {a.passed && b.passed, fmt::format("to device: {}; to host: {}", a.detail, b.detail)};
}

// Sums of pattern words: what a zero-copy read of the first `words` words must add up
// to. Cached, since the sweep asks for growing prefixes of one buffer.
class PatternSums {
 public:
  uint64_t prefix(uint64_t words) {
    auto it = cache_.upper_bound(words);
    uint64_t from = 0, sum = 0;
    if (it != cache_.begin()) {
      --it;
      from = it->first;
      sum = it->second;
    }
    for (uint64_t i = from; i < words; ++i)
      sum += pattern_word(i);
    cache_[words] = sum;
    return sum;
  }
  static uint64_t sparse(size_t bytes, size_t stride) {
    uint64_t sum = 0;
    for (uint64_t k = 0; k < bytes / stride; ++k)
      for (uint64_t m = 0; m < 4; ++m)
        sum += pattern_word(k * (stride / 4) + m);
    return sum;
  }

 private:
  std::map<uint64_t, uint64_t> cache_;
};

uint64_t sum_partials(const DeviceBuffer& partials, unsigned count) {
  std::vector<uint64_t> host(count);
  GPUVS_CUDA_CHECK(
      cudaMemcpy(host.data(), partials.get(), count * sizeof(uint64_t), cudaMemcpyDeviceToHost));
  uint64_t sum = 0;
  for (uint64_t p : host)
    sum += p;
  return sum;
}

const Result* find(const std::vector<Result>& results, std::string_view id, int64_t bytes) {
  for (const Result& r : results) {
    if (r.id != id || r.status != Status::kOk) continue;
    for (const char* key : {"bytes", "buffer_bytes"}) {
      const auto it = r.parameters.find(key);
      if (it != r.parameters.end() && std::get_if<int64_t>(&it->second) &&
          std::get<int64_t>(it->second) == bytes)
        return &r;
    }
  }
  return nullptr;
}

// The zero-copy verdict, from the figures: a full read moves the same bytes either
// way; a second pass crosses the link again (unless caches hold it); sparse access
// is where zero-copy saves traffic.
std::string zero_copy_verdict(const std::vector<Result>& results) {
  const int64_t b = static_cast<int64_t>(kZeroCopyStudyBytes);
  const Result* zc = find(results, result_id(Family::kZeroCopy, {"read"}), b);
  const Result* copy = find(results, result_id(Family::kHostCopy, {"h2d", "pinned"}), b);
  const Result* reread = find(results, result_id(Family::kZeroCopy, {"reread"}), b);
  const Result* sparse = find(results, result_id(Family::kZeroCopySparse), b);
  if (!zc || !copy || !reread || !sparse)
    return "no verdict: a figure it needs (zero-copy read, pinned copy, re-read or sparse read "
           "of 256 MiB) is missing or invalid";
  const double copy_s = static_cast<double>(b) / copy->value;
  const double once_s = static_cast<double>(b) / zc->value;
  const double twice_s = 2.0 * static_cast<double>(b) / reread->value;
  const double ratio = twice_s / once_s;
  const bool saves = sparse->value < 0.5 * copy_s;
  return fmt::format(
      "{}. Reading a whole 256 MiB host buffer once moves the same bytes either way: zero-copy "
      "{} against cudaMemcpy {} (pinned). Reading it twice took {:.2f}x the time of once: {}. "
      "Reading 16 B of every 4 KiB took {} against {} to copy the whole buffer first{}",
      saves ? "Only for sparse access" : "No", short_figure(zc->value, "B/s"),
      short_figure(copy->value, "B/s"), ratio,
      ratio > 1.7 ? "every pass crosses the link again, so re-used data costs traffic each time"
                  : "part of the second pass was served from the GPU's caches",
      short_figure(sparse->value, "s"), short_figure(copy_s, "s"),
      saves ? fmt::format(" ({:.0f}x less): there zero-copy saves link traffic and time",
                          copy_s / sparse->value)
            : ": even there the copy is not slower");
}

}  // namespace

std::vector<Result> run_host_link(BenchContext& ctx) {
  DeviceScope scope(ctx.device);
  const GpuInfo& gpu = ctx.system.gpus.at(ctx.device);
  const size_t top = ctx.quick ? kZeroCopyStudyBytes : size_t{1} << 30;
  std::vector<size_t> sizes;
  for (size_t s = ctx.quick ? size_t{64} << 10 : size_t{4} << 10; s <= top; s *= ctx.quick ? 16 : 4)
    sizes.push_back(s);

  PinnedHostBuffer pinned_src(top, /*mapped=*/true), pinned_dst(top, /*mapped=*/true);
  std::vector<uint32_t> pageable_src(top / 4), pageable_dst(top / 4);  // zeroed: pages touched
  DeviceBuffer dev_src(top), dev_dst(top);
  DeviceBuffer partials(zero_copy_grid() * sizeof(uint64_t));
  Stream s1, s2;
  fill_pattern_host(pinned_src.get(), top, false);
  std::memcpy(pageable_src.data(), pinned_src.get(), top);
  fill_pattern(dev_src.get(), top, false, s1.get());
  s1.synchronize();
  void* mapped_src = pinned_src.device_pointer();
  void* mapped_dst = pinned_dst.device_pointer();
  const Event fork(cudaEventDisableTiming), join(cudaEventDisableTiming);
  NvmlClockWatch clocks(ctx.device);
  PatternSums sums;
  std::vector<Result> results;

  auto spec_for = [&](std::string id, std::string name, std::string memory, size_t bytes,
                      double moved, bool sweep, bool two_way = false) {
    ResultSpec spec;
    spec.id = std::move(id);
    spec.name = std::move(name);
    spec.devices = {ctx.device};
    spec.parameters = {{sweep ? "bytes" : "buffer_bytes", static_cast<int64_t>(bytes)},
                       {"memory", std::move(memory)}};
    spec.headline = Headline::kBandwidth;
    spec.bytes_per_iteration = moved;
    // Both ways at once: twice the bytes, over both directions of the link.
    if (moved > 0) spec.peak = pcie_peak(gpu, two_way ? 2 : 1);
    return spec;
  };
  auto record = [&](const ResultSpec& spec, Timed& timed,
                    const std::function<Validation()>& validate) {
    results.push_back(measure_result(spec, timed, ctx.clock, ctx.options, &clocks, validate));
  };
  auto poison_device = [&](size_t bytes) {
    fill_pattern(dev_dst.get(), bytes, true, s1.get());
    s1.synchronize();
  };
  auto copy = [](void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t s) {
    GPUVS_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, kind, s));
  };

  // Pinned: cudaMemcpyAsync, one way and both ways at once on two streams.
  for (size_t n : sizes) {
    poison_device(n);
    EventTimed timed(s1.get(), [&](cudaStream_t s) {
      copy(dev_dst.get(), pinned_src.get(), n, cudaMemcpyHostToDevice, s);
    });
    record(spec_for(result_id(Family::kHostCopy, {"h2d", "pinned"}), "Host to device, pinned",
                    "pinned", n, double(n), true),
           timed, [&] { return device_check(dev_dst.get(), n, s1.get()); });
  }
  for (size_t n : sizes) {
    fill_pattern_host(pinned_dst.get(), n, true);
    EventTimed timed(s1.get(), [&](cudaStream_t s) {
      copy(pinned_dst.get(), dev_src.get(), n, cudaMemcpyDeviceToHost, s);
    });
    record(spec_for(result_id(Family::kHostCopy, {"d2h", "pinned"}), "Device to host, pinned",
                    "pinned", n, double(n), true),
           timed, [&] {
             s1.synchronize();
             return host_check(pinned_dst.get(), n);
           });
  }
  for (size_t n : sizes) {
    poison_device(n);
    fill_pattern_host(pinned_dst.get(), n, true);
    EventTimed timed(s1.get(), [&](cudaStream_t s) {
      fork.record(s);
      GPUVS_CUDA_CHECK(cudaStreamWaitEvent(s2.get(), fork.get(), 0));
      copy(dev_dst.get(), pinned_src.get(), n, cudaMemcpyHostToDevice, s);
      copy(pinned_dst.get(), dev_src.get(), n, cudaMemcpyDeviceToHost, s2.get());
      join.record(s2.get());
      GPUVS_CUDA_CHECK(cudaStreamWaitEvent(s, join.get(), 0));
    });
    record(
        spec_for(result_id(Family::kHostCopy, {"bidirectional", "pinned"}),
                 "Host link both ways at once, pinned", "pinned", n, 2.0 * double(n), true, true),
        timed, [&] {
          const Validation d = device_check(dev_dst.get(), n, s1.get());
          return both_checks(d, host_check(pinned_dst.get(), n));
        });
  }

  // Pageable: host clock.
  for (size_t n : sizes) {
    poison_device(n);
    HostClockTimed timed(
        [&] { copy(dev_dst.get(), pageable_src.data(), n, cudaMemcpyHostToDevice, s1.get()); },
        [&] { s1.synchronize(); });
    record(spec_for(result_id(Family::kHostCopy, {"h2d", "pageable"}), "Host to device, pageable",
                    "pageable", n, double(n), true),
           timed, [&] { return device_check(dev_dst.get(), n, s1.get()); });
  }
  for (size_t n : sizes) {
    fill_pattern_host(pageable_dst.data(), n, true);
    HostClockTimed timed(
        [&] { copy(pageable_dst.data(), dev_src.get(), n, cudaMemcpyDeviceToHost, s1.get()); },
        [&] { s1.synchronize(); });
    record(spec_for(result_id(Family::kHostCopy, {"d2h", "pageable"}), "Device to host, pageable",
                    "pageable", n, double(n), true),
           timed, [&] { return host_check(pageable_dst.data(), n); });
  }
  {
    // Both ways at once from pageable memory needs two calling threads: each call
    // blocks its thread while the driver stages the data.
    const size_t n = top;
    poison_device(n);
    fill_pattern_host(pageable_dst.data(), n, true);
    HostClockTimed timed(
        [&] {
          cudaError_t back = cudaSuccess;
          std::thread other([&] {
            back = cudaSetDevice(ctx.device);
            if (back == cudaSuccess)
              back = cudaMemcpyAsync(pageable_dst.data(), dev_src.get(), n, cudaMemcpyDeviceToHost,
                                     s2.get());
            if (back == cudaSuccess) back = cudaStreamSynchronize(s2.get());
          });
          const cudaError_t there = cudaMemcpyAsync(dev_dst.get(), pageable_src.data(), n,
                                                    cudaMemcpyHostToDevice, s1.get());
          other.join();
          GPUVS_CUDA_CHECK(there);
          GPUVS_CUDA_CHECK(back);
        },
        [&] { s1.synchronize(); });
    record(spec_for(result_id(Family::kHostCopy, {"bidirectional", "pageable"}),
                    "Host link both ways at once, pageable", "pageable", n, 2.0 * double(n), true,
                    true),
           timed, [&] {
             const Validation d = device_check(dev_dst.get(), n, s1.get());
             return both_checks(d, host_check(pageable_dst.data(), n));
           });
  }

  // Zero-copy: kernels on mapped pinned memory.
  const unsigned grid = zero_copy_grid();
  for (size_t n : sizes) {
    EventTimed timed(s1.get(), [&](cudaStream_t s) {
      launch_zero_copy_read(mapped_src, n, 1, partials.as<uint64_t>(), s);
    });
    record(spec_for(result_id(Family::kZeroCopy, {"read"}),
                    "Zero-copy read (kernel reads host memory)", "mapped", n, double(n), true),
           timed, [&]() -> Validation {
             s1.synchronize();
             const uint64_t got = sum_partials(partials, grid), want = sums.prefix(n / 4);
             if (got == want)
               return {true, fmt::format("sum of the {} words read equals the host's sum", n / 4)};
             return {false, fmt::format("sum {} differs from the host's {}", got, want)};
           });
  }
  for (size_t n : sizes) {
    fill_pattern_host(pinned_dst.get(), n, true);
    EventTimed timed(s1.get(), [&](cudaStream_t s) { launch_zero_copy_write(mapped_dst, n, s); });
    record(spec_for(result_id(Family::kZeroCopy, {"write"}),
                    "Zero-copy write (kernel writes host memory)", "mapped", n, double(n), true),
           timed, [&] {
             s1.synchronize();
             return host_check(pinned_dst.get(), n);
           });
  }
  for (size_t n : sizes) {
    fill_pattern_host(pinned_dst.get(), n, true);
    EventTimed timed(s1.get(),
                     [&](cudaStream_t s) { launch_copy(mapped_src, mapped_dst, n / 16, s); });
    record(spec_for(result_id(Family::kZeroCopy, {"bidirectional"}),
                    "Zero-copy both ways (kernel copies host to host)", "mapped", n,
                    2.0 * double(n), true, true),
           timed, [&] {
             s1.synchronize();
             return host_check(pinned_dst.get(), n);
           });
  }

  // The zero-copy study: a second pass, and sparse access.
  {
    const size_t n = kZeroCopyStudyBytes;
    EventTimed timed(s1.get(), [&](cudaStream_t s) {
      launch_zero_copy_read(mapped_src, n, 2, partials.as<uint64_t>(), s);
    });
    ResultSpec spec = spec_for(result_id(Family::kZeroCopy, {"reread"}),
                               "Zero-copy read, two passes", "mapped", n, 2.0 * double(n), false);
    spec.parameters["passes"] = int64_t{2};
    record(spec, timed, [&]() -> Validation {
      s1.synchronize();
      const uint64_t got = sum_partials(partials, grid), want = 2 * sums.prefix(n / 4);
      if (got == want)
        return {true, "sum of both passes equals twice the host's sum of the buffer"};
      return {false, fmt::format("sum {} differs from twice the host's sum, {}", got, want)};
    });
  }
  {
    const size_t n = kZeroCopyStudyBytes;
    EventTimed timed(s1.get(), [&](cudaStream_t s) {
      launch_zero_copy_sparse_read(mapped_src, n, kSparseStride, partials.as<uint64_t>(), s);
    });
    ResultSpec spec = spec_for(result_id(Family::kZeroCopySparse),
                               "Zero-copy sparse read (16 B of every 4 KiB), time for the buffer",
                               "mapped", n, 0, false);
    spec.headline = Headline::kLatency;
    spec.parameters["stride_bytes"] = static_cast<int64_t>(kSparseStride);
    spec.parameters["bytes_requested"] = static_cast<int64_t>(n / kSparseStride * 16);
    record(spec, timed, [&]() -> Validation {
      s1.synchronize();
      const uint64_t got = sum_partials(partials, grid);
      const uint64_t want = PatternSums::sparse(n, kSparseStride);
      if (got == want)
        return {true,
                fmt::format("sum of the {} vectors read equals the host's sum", n / kSparseStride)};
      return {false, fmt::format("sum {} differs from the host's {}", got, want)};
    });
    results.back().parameters["verdict"] = zero_copy_verdict(results);
  }
  return results;
}

GPUVS_BENCHMARK(run_host_link, "host.link");

}  // namespace gpuvs
