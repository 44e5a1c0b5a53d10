// Peer links: for every pair of selected GPUs, copy-engine copies
// (cudaMemcpyPeerAsync) and SM-driven copies (a kernel on the source GPU writing the
// peer's memory), one way and both ways at once, and the latency of a dependent load
// from the peer's memory; with the path (NVLink links and their rate, or PCIe) from
// the NVML topology. One result per pair and measurement (a matrix per measurement);
// both-ways results once per unordered pair (src < dst).
//
// Bytes counted: bytes delivered (both ways: the sum of the two directions).
// Two H200s (NV18): copy engine 394 GB/s one way, 771 GB/s both ways (nvbandwidth:
// 389 and 779), SM-driven 370 and 725 GB/s, load latency 851 ns.
// With one GPU: one result "peer.link", status unsupported.
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "bench/benchmarks.h"
#include "bench/common/chase.h"
#include "bench/common/chase_kernels.h"
#include "bench/common/mem_util.h"
#include "bench/common/pattern.h"
#include "bench/common/stream_kernels.h"
#include "gpu/check.h"
#include "gpu/device.h"
#include "gpu/nvml.h"
#include "measure/cuda_timer.h"
#include "suite/produces.h"

namespace gpuvs {

namespace {

constexpr size_t kChaseBytes = size_t{2} << 20;  // inside the peer's L2

struct Path {
  std::string label;  // "NVLink x18 via NVSwitch (NV18)", "PCIe"
  int links = 0;
  std::optional<int> generation;
  bool peer_access = false;
};

// Per-direction rate of one NVLink, GB/s, by generation.
std::optional<double> nvlink_gb_s(std::optional<int> generation) {
  if (!generation) return std::nullopt;
  switch (*generation) {
    case 1:
      return 20.0;
    case 2:
    case 3:
    case 4:
      return 25.0;
    case 5:
      return 50.0;
    default:
      return std::nullopt;
  }
}

bool is_active_with_remote(const NvLinkInfo& l) {
  return l.active && l.remote_pci_bus_id && !l.remote_pci_bus_id->empty();
}

int active_links(const GpuInfo& gpu, std::optional<int>& generation) {
  int n = 0;
  for (const NvLinkInfo& l : gpu.nvlinks) {
    if (!l.active) continue;
    ++n;
    if (!generation) generation = l.version;
  }
  return n;
}

Path find_path(const SystemInfo& system, int i, int j) {
  const GpuInfo& a = system.gpus.at(i);
  const GpuInfo& b = system.gpus.at(j);
  Path p;
  p.peer_access = can_access_peer(i, j);
  int direct = 0, via = 0;
  for (const NvLinkInfo& l : a.nvlinks) {
    if (!is_active_with_remote(l)) continue;
    if (nvml::same_pci_bus_id(*l.remote_pci_bus_id, b.pci_bus_id)) {
      ++direct;
      p.generation = l.version;
    }
  }
  if (direct == 0) {
    // Through a switch: a link of `a` whose far end is also the far end of a link of `b`.
    for (const NvLinkInfo& l : a.nvlinks) {
      if (!is_active_with_remote(l) || nvml::same_pci_bus_id(*l.remote_pci_bus_id, a.pci_bus_id))
        continue;
      for (const NvLinkInfo& m : b.nvlinks) {
        if (is_active_with_remote(m) &&
            nvml::same_pci_bus_id(*m.remote_pci_bus_id, *l.remote_pci_bus_id)) {
          ++via;
          p.generation = l.version;
          break;
        }
      }
    }
  }
  if (direct > 0) {
    p.links = direct;
    p.label = fmt::format("NVLink x{} (NV{})", direct, direct);
  } else if (via > 0) {
    p.links = via;
    p.label = fmt::format("NVLink x{} via NVSwitch (NV{})", via, via);
  } else if (const int active = active_links(a, p.generation);
             active > 0 && active_links(b, p.generation) > 0 && p.peer_access) {
    // Both GPUs have NVLinks up but NVML does not name their far ends: most likely
    // through a switch; said as such.
    p.links = active;
    p.label = fmt::format("NVLink x{} (far end not reported by NVML)", active);
  } else if (!nvml::available()) {
    p.label = p.peer_access ? "peer access, link unknown (no NVML)" : "no peer access";
  } else {
    p.label = p.peer_access ? "PCIe" : "PCIe, no peer access (copies staged through host memory)";
  }
  return p;
}

std::optional<Peak> path_peak(const SystemInfo& system, int src, const Path& p, int directions) {
  if (p.links > 0) {
    const auto rate = nvlink_gb_s(p.generation);
    if (!rate) return std::nullopt;
    return Peak{p.links * *rate * 1e9 * directions, "B/s", "derived",
                fmt::format("{} NVLink{} links x {} GB/s per direction{}", p.links, *p.generation,
                            *rate, directions == 2 ? " x 2 directions" : "")};
  }
  return pcie_peak(system.gpus.at(src), directions);
}

// What each GPU holds: a pattern to send, a buffer to receive into, a stream, and
// events for joining another GPU's stream.
struct Gpu {
  explicit Gpu(int index, size_t bytes)
      : device(index), scope(index), send(bytes), recv(bytes), chase(kChaseBytes) {}
  int device;
  DeviceScope scope;  // current while the members below are created
  DeviceBuffer send, recv, chase;
  Stream stream;
  Event fork{cudaEventDisableTiming}, join{cudaEventDisableTiming};
};

Validation received(Gpu& g, size_t bytes) {
  DeviceScope scope(g.device);
  const PatternCheck c = check_pattern(g.recv.get(), bytes, g.stream.get());
  if (c.mismatches == 0)
    return {true, fmt::format("all {} words arrived intact on GPU {} (poisoned before)", c.words,
                              g.device)};
  return {false, fmt::format("{} of {} words wrong on GPU {}, first at word {}", c.mismatches,
                             c.words, g.device, c.first_bad)};
}

void poison(Gpu& g, size_t bytes) {
  DeviceScope scope(g.device);
  fill_pattern(g.recv.get(), bytes, true, g.stream.get());
  g.stream.synchronize();
}

// Both directions of a pair at once: `iterations` copies queued on each GPU's own
// stream between one fork and one join, so the cross-GPU synchronisation is paid once
// per batch, not once per copy (per copy it cost ~1 % of a 512 MiB transfer over
// NVLink, 771 vs 779 GB/s). The events on GPU a's stream bracket both directions.
class BothWaysTimed final : public Timed {
 public:
  using OneWay = std::function<void(Gpu& from, Gpu& to, cudaStream_t)>;
  BothWaysTimed(Gpu& a, Gpu& b, OneWay one_way) : a_(a), b_(b), one_way_(std::move(one_way)) {}

  double run(int64_t iterations) override {
    const DeviceScope on_a(a_.device);
    start_.record(a_.stream.get());
    a_.fork.record(a_.stream.get());
    GPUVS_CUDA_CHECK(cudaStreamWaitEvent(b_.stream.get(), a_.fork.get(), 0));
    for (int64_t k = 0; k < iterations; ++k)
      one_way_(a_, b_, a_.stream.get());
    {
      const DeviceScope on_b(b_.device);
      for (int64_t k = 0; k < iterations; ++k)
        one_way_(b_, a_, b_.stream.get());
      b_.join.record(b_.stream.get());
    }
    GPUVS_CUDA_CHECK(cudaStreamWaitEvent(a_.stream.get(), b_.join.get(), 0));
    GPUVS_CUDA_CHECK_LAUNCH();
    stop_.record(a_.stream.get());
    stop_.synchronize();
    return stop_.seconds_since(start_);
  }

 private:
  Gpu& a_;
  Gpu& b_;
  OneWay one_way_;
  Event start_, stop_;
};

// Batches of both-way copies long enough that the one fork and join per batch are
// noise (a 512 MiB copy takes ~1.4 ms over NVLink 4: 16 or more per sample).
MeasureOptions both_ways_options(MeasureOptions o) {
  o.min_sample_s = std::max(o.min_sample_s, 0.02);
  return o;
}

}  // namespace

std::vector<Result> run_peer(BenchContext& ctx) {
  const std::vector<int>& devices = ctx.devices;
  if (devices.size() < 2)
    return {unsupported_result(
        result_id(Family::kPeerLink), "Peer links", {ctx.device},
        fmt::format("{} GPU selected: peer links need two or more", devices.size()))};

  const DeviceScope outer(ctx.device);  // restores the caller's device after the Gpus go
  const size_t bytes = ctx.quick ? size_t{256} << 20 : size_t{512} << 20;
  std::vector<std::unique_ptr<Gpu>> gpus;
  for (int d : devices) {
    auto g = std::make_unique<Gpu>(d, bytes);
    fill_pattern(g->send.get(), bytes, false, g->stream.get());
    g->stream.synchronize();
    gpus.push_back(std::move(g));
  }
  std::vector<std::unique_ptr<NvmlClockWatch>> clocks;
  for (int d : devices)
    clocks.push_back(std::make_unique<NvmlClockWatch>(d));

  std::vector<Result> results;
  auto spec_for = [&](std::string id, std::string name, int i, int j, const Path& path,
                      Headline headline, int directions) {
    ResultSpec spec;
    spec.id = std::move(id);
    spec.name = std::move(name);
    spec.devices = {devices[i], devices[j]};
    spec.parameters = {
        {"src", int64_t{devices[i]}}, {"dst", int64_t{devices[j]}}, {"path", path.label}};
    if (path.links > 0) {
      spec.parameters["nvlink_links"] = int64_t{path.links};
      if (path.generation) spec.parameters["nvlink_generation"] = int64_t{*path.generation};
    }
    spec.headline = headline;
    if (headline == Headline::kBandwidth) {
      spec.parameters["bytes_per_copy"] = static_cast<int64_t>(bytes);
      spec.bytes_per_iteration = static_cast<double>(bytes) * directions;
      spec.peak = path_peak(ctx.system, devices[i], path, directions);
    }
    return spec;
  };
  auto peer_missing = [&](std::string id, std::string name, int i, int j, const Path& path) {
    Result r = unsupported_result(std::move(id), std::move(name), {devices[i], devices[j]},
                                  fmt::format("GPU {} cannot address GPU {}'s memory ({})",
                                              devices[i], devices[j], path.label));
    r.parameters = {
        {"src", int64_t{devices[i]}}, {"dst", int64_t{devices[j]}}, {"path", path.label}};
    return r;
  };

  const size_t n16 = bytes / 16;
  const int count = static_cast<int>(devices.size());

  // One way, every ordered pair.
  for (int i = 0; i < count; ++i) {
    for (int j = 0; j < count; ++j) {
      if (i == j) continue;
      Gpu& src = *gpus[i];
      Gpu& dst = *gpus[j];
      const Path path = find_path(ctx.system, devices[i], devices[j]);
      DeviceScope scope(src.device);
      // Peer access on for every measurement, copy engines included: without it a
      // peer copy is staged through host memory.
      std::optional<PeerAccessScope> access;
      if (path.peer_access) access.emplace(src.device, dst.device);

      poison(dst, bytes);
      {
        EventTimed timed(src.stream.get(), [&](cudaStream_t s) {
          GPUVS_CUDA_CHECK(cudaMemcpyPeerAsync(dst.recv.get(), dst.device, src.send.get(),
                                               src.device, bytes, s));
        });
        results.push_back(measure_result(
            spec_for(result_id(Family::kPeerCopy, {"ce", "unidirectional"}),
                     "Peer copy, copy engine, one way", i, j, path, Headline::kBandwidth, 1),
            timed, ctx.clock, ctx.options, clocks[i].get(), [&] { return received(dst, bytes); }));
      }

      if (!path.peer_access) {
        results.push_back(peer_missing(result_id(Family::kPeerCopy, {"sm", "unidirectional"}),
                                       "Peer copy, SM-driven (kernel writes the peer), one way", i,
                                       j, path));
        results.push_back(
            peer_missing(result_id(Family::kPeerLatency), "Peer load latency", i, j, path));
        continue;
      }
      poison(dst, bytes);
      {
        EventTimed timed(src.stream.get(), [&](cudaStream_t s) {
          launch_copy(src.send.get(), dst.recv.get(), n16, s);
        });
        results.push_back(measure_result(
            spec_for(result_id(Family::kPeerCopy, {"sm", "unidirectional"}),
                     "Peer copy, SM-driven (kernel writes the peer), one way", i, j, path,
                     Headline::kBandwidth, 1),
            timed, ctx.clock, ctx.options, clocks[i].get(), [&] { return received(dst, bytes); }));
      }
      {
        const uint64_t nodes = kChaseBytes / kChaseStride;
        {
          DeviceScope on_dst(dst.device);
          init_chase(dst.chase.get(), nodes, dst.stream.get());
          dst.stream.synchronize();
        }
        ChaseTimed timed(src.stream.get(), dst.chase.get(), nodes, /*bypass=*/true);
        ResultSpec spec =
            spec_for(result_id(Family::kPeerLatency), "Peer load latency (dependent loads)", i, j,
                     path, Headline::kLatency, 1);
        spec.parameters["working_set_bytes"] = static_cast<int64_t>(kChaseBytes);
        results.push_back(measure_result(spec, timed, ctx.clock, latency_options(ctx.options),
                                         clocks[i].get(), [&] { return timed.check(); }));
      }
    }
  }

  // Both ways at once, every unordered pair (BothWaysTimed).
  for (int i = 0; i < count; ++i) {
    for (int j = i + 1; j < count; ++j) {
      Gpu& a = *gpus[i];
      Gpu& b = *gpus[j];
      const Path path = find_path(ctx.system, devices[i], devices[j]);
      DeviceScope scope(a.device);
      const bool both_access = path.peer_access && can_access_peer(devices[j], devices[i]);
      std::optional<PeerAccessScope> a_to_b, b_to_a;
      if (both_access) {
        a_to_b.emplace(a.device, b.device);
        b_to_a.emplace(b.device, a.device);
      }
      auto both_received = [&]() -> Validation {
        const Validation x = received(a, bytes), y = received(b, bytes);
        return {x.passed && y.passed, x.detail + "; " + y.detail};
      };

      poison(a, bytes);
      poison(b, bytes);
      {
        BothWaysTimed timed(a, b, [&](Gpu& from, Gpu& to, cudaStream_t s) {
          GPUVS_CUDA_CHECK(cudaMemcpyPeerAsync(to.recv.get(), to.device, from.send.get(),
                                               from.device, bytes, s));
        });
        results.push_back(measure_result(
            spec_for(result_id(Family::kPeerCopy, {"ce", "bidirectional"}),
                     "Peer copy, copy engine, both ways at once", i, j, path, Headline::kBandwidth,
                     2),
            timed, ctx.clock, both_ways_options(ctx.options), clocks[i].get(), both_received));
      }

      if (!both_access) {
        results.push_back(peer_missing(result_id(Family::kPeerCopy, {"sm", "bidirectional"}),
                                       "Peer copy, SM-driven, both ways at once", i, j, path));
        continue;
      }
      poison(a, bytes);
      poison(b, bytes);
      {
        BothWaysTimed timed(a, b, [&](Gpu& from, Gpu& to, cudaStream_t s) {
          launch_copy(from.send.get(), to.recv.get(), n16, s);
        });
        results.push_back(measure_result(
            spec_for(result_id(Family::kPeerCopy, {"sm", "bidirectional"}),
                     "Peer copy, SM-driven, both ways at once", i, j, path, Headline::kBandwidth,
                     2),
            timed, ctx.clock, both_ways_options(ctx.options), clocks[i].get(), both_received));
      }
    }
  }
  return results;
}

GPUVS_BENCHMARK(run_peer, "peer.link");

}  // namespace gpuvs
