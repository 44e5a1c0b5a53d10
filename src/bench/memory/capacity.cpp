// Memory capacity: the largest single allocation (cudaMalloc) and the total that can
// be allocated in pieces, on an otherwise idle device. Not timings: each result is
// one quantity in bytes, validated by writing a pattern over all of it and reading
// it back, and compared with the total the driver reports (cudaMemGetInfo).
// H200 (141 GB board): see docs/memory.md.
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <vector>

#include "bench/benchmarks.h"
#include "bench/common/mem_util.h"
#include "bench/common/pattern.h"
#include "gpu/device.h"
#include "suite/produces.h"

namespace gpuvs {

namespace {

// `scratch` holds the check's counters: allocated before the device is filled, since
// afterwards not even 16 bytes can be had.
Validation check_written(const std::vector<DeviceBuffer>& buffers, const DeviceBuffer& scratch,
                         cudaStream_t stream) {
  uint64_t words = 0, bad = 0;
  for (const DeviceBuffer& b : buffers) {
    fill_pattern(b.get(), b.bytes(), /*poison=*/false, stream);
    const PatternCheck c =
        check_pattern(b.get(), b.bytes(), stream, scratch.as<unsigned long long>());
    words += c.words;
    bad += c.mismatches;
  }
  if (bad == 0)
    return {true, fmt::format("a pattern written over all {} words ({} allocation(s)) read back "
                              "intact",
                              words, buffers.size())};
  return {false, fmt::format("{} of {} words read back wrong", bad, words)};
}

}  // namespace

std::vector<Result> run_capacity(BenchContext& ctx) {
  DeviceScope scope(ctx.device);
  Stream stream;
  // The check counters; their page (2 MiB at most) is left out of both figures.
  const DeviceBuffer scratch(2 * sizeof(unsigned long long));
  const auto [free_b, total_b] = device_memory_info();
  const std::optional<Peak> peak =
      Peak{static_cast<double>(total_b), "B", "derived", "total memory as cudaMemGetInfo reports"};
  // Granularity of the search: 2 MiB (the large-page size), 64 MiB in the quick pass.
  const size_t grain = ctx.quick ? size_t{64} << 20 : size_t{2} << 20;
  std::vector<Result> results;

  {
    // Back off from the free figure by 1, 2, 4 ... grains until an allocation
    // succeeds, then bisect between that and the last failure.
    size_t ok = 0, fail = (free_b / grain + 1) * grain;
    for (size_t back = 0; ok == 0; back = back ? back * 2 : 1) {
      if (back * grain >= fail) break;
      const size_t bytes = (free_b / grain - back) * grain;
      if (bytes == 0) break;
      if (DeviceBuffer::try_allocate(bytes)) {
        ok = bytes;
      } else {
        fail = bytes;
      }
    }
    while (ok && fail - ok > grain) {
      const size_t mid = ok + (fail - ok) / grain / 2 * grain;
      if (DeviceBuffer::try_allocate(mid)) {
        ok = mid;
      } else {
        fail = mid;
      }
    }
    Validation v{false, "no allocation succeeded"};
    if (ok) {
      std::vector<DeviceBuffer> one;
      one.push_back(DeviceBuffer(ok));
      v = check_written(one, scratch, stream.get());
    }
    Result r = quantity_result(result_id(Family::kLargestAllocation), "Largest single allocation",
                               {ctx.device}, static_cast<double>(ok), "B", peak, v);
    r.parameters = {{"granularity_bytes", static_cast<int64_t>(grain)},
                    {"free_bytes_before", static_cast<int64_t>(free_b)}};
    results.push_back(std::move(r));
  }

  {
    // Greedy: the largest pieces first (4 GiB), then 256 MiB, 16 MiB, 2 MiB.
    std::vector<DeviceBuffer> pieces;
    size_t sum = 0;
    for (size_t piece : {size_t{4} << 30, size_t{256} << 20, size_t{16} << 20, size_t{2} << 20}) {
      if (ctx.quick && piece < grain) break;
      while (auto b = DeviceBuffer::try_allocate(piece)) {
        sum += piece;
        pieces.push_back(std::move(*b));
      }
    }
    const Validation v = pieces.empty() ? Validation{false, "no allocation succeeded"}
                                        : check_written(pieces, scratch, stream.get());
    Result r = quantity_result(result_id(Family::kTotalAllocatable), "Total allocatable memory",
                               {ctx.device}, static_cast<double>(sum), "B", peak, v);
    r.parameters = {{"pieces", static_cast<int64_t>(pieces.size())},
                    {"smallest_piece_bytes", static_cast<int64_t>(ctx.quick ? grain : 2 << 20)},
                    {"free_bytes_before", static_cast<int64_t>(free_b)}};
    results.push_back(std::move(r));
  }
  return results;
}

GPUVS_BENCHMARK(run_capacity, "memory.capacity");

}  // namespace gpuvs
