// The memory test's host side. See memtest.h.
#include "check/memtest.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "check/memtest_kernels.h"
#include "core/error.h"
#include "gpu/check.h"
#include "gpu/device.h"

namespace gpuvs::check {

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The memory under test, in chunks, and the error sink.
class Arena {
 public:
  Arena(const MemtestOptions& o, size_t free_bytes) {
    size_t want =
        o.bytes ? *o.bytes : (free_bytes > o.reserve_bytes ? free_bytes - o.reserve_bytes : 0);
    want -= want % sizeof(uint32_t);
    size_t chunk = std::max<size_t>(o.chunk_bytes - o.chunk_bytes % sizeof(uint32_t), 4);
    constexpr size_t kSmallest = size_t{64} << 20;
    uint64_t index = 0;
    while (want > 0) {
      const size_t size = std::min(chunk, want);
      std::optional<DeviceBuffer> b = DeviceBuffer::try_allocate(size);
      if (!b) {
        if (chunk <= kSmallest || o.bytes) break;  // as much as could be had
        chunk /= 2;
        continue;
      }
      chunks_.push_back({b->as<uint32_t>(), size / sizeof(uint32_t), index});
      index += size / sizeof(uint32_t);
      buffers_.push_back(std::move(*b));
      want -= size;
    }
    if (o.bytes && want > 0)
      throw OutOfMemoryError(
          fmt::format("memory test: cannot allocate the {} bytes asked for", *o.bytes));
    counters_ = DeviceBuffer(2 * sizeof(unsigned long long));
    records_ = DeviceBuffer(std::max(1u, o.max_records) * sizeof(DeviceMemError));
    sink_ = {counters_.as<unsigned long long>(), counters_.as<unsigned long long>() + 1,
             records_.as<DeviceMemError>(), o.max_records};
  }

  std::span<const MemtestChunk> chunks() const { return chunks_; }
  size_t bytes() const {
    size_t b = 0;
    for (const MemtestChunk& c : chunks_)
      b += c.count * sizeof(uint32_t);
    return b;
  }
  const ErrorSink& sink() const { return sink_; }

  void reset_sink(cudaStream_t s) {
    GPUVS_CUDA_CHECK(cudaMemsetAsync(counters_.get(), 0, 2 * sizeof(unsigned long long), s));
  }
  // Errors counted since the last reset; the records that fit appended to `out`
  // (at most `room`).
  uint64_t collect(cudaStream_t s, std::vector<MemError>& out, size_t room) {
    unsigned long long c[2] = {0, 0};
    GPUVS_CUDA_CHECK(cudaMemcpyAsync(c, counters_.get(), sizeof c, cudaMemcpyDeviceToHost, s));
    GPUVS_CUDA_CHECK(cudaStreamSynchronize(s));
    const size_t n = std::min<size_t>({c[1], sink_.capacity, room});
    if (n > 0) {
      std::vector<DeviceMemError> rec(n);
      GPUVS_CUDA_CHECK(cudaMemcpyAsync(rec.data(), records_.get(), n * sizeof(DeviceMemError),
                                       cudaMemcpyDeviceToHost, s));
      GPUVS_CUDA_CHECK(cudaStreamSynchronize(s));
      for (const DeviceMemError& e : rec)
        out.push_back({e.address, e.expected, e.actual});
    }
    return c[0];
  }

 private:
  std::vector<DeviceBuffer> buffers_;
  std::vector<MemtestChunk> chunks_;
  DeviceBuffer counters_, records_;
  ErrorSink sink_;
};

}  // namespace

MemtestResult run_memtest(int device, const MemtestOptions& o) {
  DeviceScope scope(device);
  MemtestResult r;
  GPUVS_CUDA_CHECK(cudaMemGetInfo(&r.free_bytes, &r.total_bytes));
  Arena arena(o, r.free_bytes);
  r.tested_bytes = arena.bytes();
  Stream stream;
  cudaStream_t s = stream.get();
  const double t0 = now_s();

  auto say = [&](const std::string& text) {
    if (o.progress) o.progress(text);
  };
  auto fill = [&](PatternSpec p) {
    for (const MemtestChunk& c : arena.chunks())
      launch_fill(c.words, c.count, c.first_index, p, s);
    if (o.after_write) o.after_write(arena.chunks(), s);
  };
  auto check = [&](PatternSpec p) {
    for (const MemtestChunk& c : arena.chunks())
      launch_check(c.words, c.count, c.first_index, p, arena.sink(), s);
  };
  auto sweep = [&](PatternSpec expect, PatternSpec write, bool descending) {
    for (const MemtestChunk& c : arena.chunks())
      launch_check_and_write(c.words, c.count, c.first_index, expect, write, descending,
                             arena.sink(), s);
  };
  // One pass: its kernels between a reset and a collection of the error sink.
  auto pass = [&](const std::string& name, int sweeps, const std::function<void()>& body) {
    const double p0 = now_s();
    arena.reset_sink(s);
    body();
    MemtestPass p{name, sweeps, 0, 0};
    p.errors = arena.collect(s, r.recorded,
                             o.max_records - std::min<size_t>(o.max_records, r.recorded.size()));
    p.seconds = now_s() - p0;
    r.errors += p.errors;
    r.passes.push_back(p);
  };

  // Walking ones and zeros: every bit lane of every word held alone high, then alone
  // low (a stuck or shorted data line shows in one bit position).
  for (bool zeros : {false, true}) {
    const std::string name = zeros ? "walking zeros" : "walking ones";
    say(name);
    pass(name, 64, [&] {
      for (int bit = 0; bit < 32; ++bit) {
        const PatternSpec p{false, 1u << bit, 0, zeros};
        fill(p);
        check(p);
      }
    });
  }
  // Moving inversions (van de Goor's MATS+-like march): write p; upwards read p,
  // write ~p; downwards read ~p, write p; read p.
  for (uint32_t base : {0x00000000u, 0x55555555u}) {
    const std::string name = fmt::format("moving inversions {:#010x}", base);
    say(name);
    pass(name, 6, [&] {
      const PatternSpec p{false, base, 0, false};
      const PatternSpec q{false, base, 0, true};
      fill(p);
      sweep(p, q, false);
      sweep(q, p, true);
      check(p);
    });
  }
  // Random values and their complement: data-dependent faults no fixed pattern shows.
  say("random");
  pass("random", 4, [&] {
    for (bool invert : {false, true}) {
      const PatternSpec p{true, 0, o.seed, invert};
      fill(p);
      check(p);
    }
  });

  r.seconds = now_s() - t0;
  int sweeps = 0;
  for (const MemtestPass& p : r.passes)
    sweeps += p.sweeps;
  r.bandwidth = r.seconds > 0 ? double(sweeps) * double(r.tested_bytes) / r.seconds : 0;
  r.ranges = merge_ranges(r.recorded);
  return r;
}

}  // namespace gpuvs::check
