#include "check/gpu_levels.h"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <thread>

#include "bench/compute/gemm_runner.h"
#include "check/gemm_consistency.h"
#include "check/level_verdicts.h"
#include "check/levels.h"
#include "check/memtest.h"
#include "check/sustained.h"
#include "core/host.h"
#include "core/units.h"
#include "gpu/check.h"
#include "gpu/probe.h"
#include "measure/harness.h"
#include "report/baseline.h"
#include "specs/catalogue.h"
#include "suite/registry.h"

namespace gpuvs::check {

namespace {

// The CUDA ordinal of each requested NVML GPU, by PCI bus id.
std::vector<std::optional<int>> cuda_devices_of(const std::vector<GpuReadings>& gpus) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    count = 0;
  }
  std::vector<std::string> cuda_ids;
  for (int d = 0; d < count; ++d) {
    char id[32] = {};
    GPUVS_CUDA_CHECK(cudaDeviceGetPCIBusId(id, sizeof id, d));
    cuda_ids.emplace_back(id);
  }
  std::vector<std::string> nvml_ids;
  for (const GpuReadings& g : gpus)
    nvml_ids.push_back(g.pci_bus_id);
  return match_cuda_devices(nvml_ids, cuda_ids);
}

TestVerdict not_visible(const GpuReadings& g) {
  return {"cuda.visible", Status::kWarn,
          fmt::format("CUDA does not see this GPU (PCI {}; CUDA_VISIBLE_DEVICES?): only the "
                      "NVML tests ran",
                      g.pci_bus_id),
          "every GPU asked for is visible to CUDA", "gpuvs"};
}

MemtestSummary summary_of(const MemtestResult& m) {
  return {m.free_bytes, m.tested_bytes, m.seconds, m.errors, m.ranges, m.truncated()};
}

// The value of a result of `run` with this id on `device`; for a size sweep, at its
// largest size ("bytes").
std::optional<double> figure(const RunFile& run, std::string_view id, int device) {
  std::optional<double> best;
  double best_bytes = -1;
  for (const Result& r : run.results) {
    if (r.id != id || r.status != ::gpuvs::Status::kOk || r.devices.empty() ||
        r.devices[0] != device)
      continue;
    double bytes = 0;
    if (auto it = r.parameters.find("bytes"); it != r.parameters.end()) {
      if (const auto* i = std::get_if<int64_t>(&it->second)) bytes = static_cast<double>(*i);
      if (const auto* d = std::get_if<double>(&it->second)) bytes = *d;
    }
    if (bytes > best_bytes) {
      best_bytes = bytes;
      best = r.value;
    }
  }
  return best;
}

struct Level2 {
  std::vector<GpuReadings> start;
  std::vector<std::optional<int>> cuda;
  std::vector<std::vector<TestVerdict>> tests;  // per requested GPU
  RunFile run;
};

void progress(const CheckRequest& request, const std::string& line) {
  if (request.progress) request.progress(line);
}

// Level 2's measurements and verdicts on every requested GPU; `start` read before.
Level2 measure_level2(const nvml::Library& library, const CheckRequest& request) {
  Level2 l;
  l.start = read_level1(library, request.gpus, 0.0);
  l.cuda = cuda_devices_of(l.start);
  l.tests.resize(l.start.size());
  l.run.meta.command = "check";
  l.run.meta.started_at = utc_now_iso8601();
  l.run.meta.host = host_name();
  // No GPU of the request visible to CUDA: level 1's tests and the warnings only.
  const bool any = std::any_of(l.cuda.begin(), l.cuda.end(),
                               [](const std::optional<int>& d) { return d.has_value(); });
  if (any) l.run.system = probe_system();
  WallClock& clock = steady_wall_clock();

  std::vector<GemmRunFigures> figures;
  std::vector<std::pair<size_t, GemmConsistency>> gemms;  // (GPU slot, result)
  for (size_t i = 0; i < l.start.size(); ++i) {
    const GpuReadings& g = l.start[i];
    if (!l.cuda[i]) {
      l.tests[i].push_back(not_visible(g));
      continue;
    }
    const int dev = *l.cuda[i];
    const std::string who = fmt::format("GPU {}", g.index);
    MemtestOptions mo;
    mo.progress = [&](const std::string& what) {
      progress(request, who + ": memory test, " + what);
    };
    l.tests[i].push_back(judge_memtest(summary_of(run_memtest(dev, mo))));
    for (GemmPrecision p : {GemmPrecision::kBf16, GemmPrecision::kFp32}) {
      progress(request, fmt::format("{}: GEMM consistency, {}", who, gemm_types(p).name));
      GemmConsistencyOptions go;
      go.precision = p;
      go.timing = quick_options();
      GemmConsistency c = run_gemm_consistency(l.run.system, dev, go, clock);
      c.figures.gpu = g.index;
      figures.push_back(c.figures);
      gemms.emplace_back(i, std::move(c));
    }
    BenchContext ctx{.system = l.run.system,
                     .device = dev,
                     .options = quick_options(),
                     .quick = true,
                     .clock = clock,
                     .devices = {dev}};
    // The figures a baseline judges, measured as `gpuvs run --quick` measures them: the
    // consistency GEMMs above take cuBLASLt's first algorithm, so their rate is not
    // compute.gemm's (the fastest of four).
    auto measure = [&](const std::string& name, auto&& run) {
      progress(request, fmt::format("{}: {}", who, name));
      try {
        for (Result& r : run())
          l.run.results.push_back(std::move(r));
      } catch (const Error& e) {
        l.run.errors.push_back({fmt::format("check {} on GPU {}", name, g.index), e.what()});
      }
    };
    measure("compute.gemm bf16", [&] {
      GemmBenchOptions go;
      go.precisions = {GemmPrecision::kBf16};
      go.search_best = false;
      go.max_algos = 4;
      go.rest_s = 0.5;
      return run_gemm_bench(ctx, go);
    });
    for (const std::string name : {"memory.hbm", "host.link"})
      measure(name, [&] {
        const std::vector<std::string> names = {name};
        return select_benchmarks(names).front()->run(ctx);
      });
    // Floors: the datasheet's HBM bandwidth, the PCIe link's rate.
    const GpuSpec* spec = Catalogue::builtin().match_driver(g.name, std::nullopt);
    std::optional<double> hbm_floor;
    std::string hbm_from = "no datasheet figure for " + g.name;
    if (spec) {
      if (auto it = spec->figures.find("memory.bandwidth"); it != spec->figures.end()) {
        hbm_floor = kHbmFloorFactor * it->second.value;
        hbm_from = fmt::format("{:.2f} x the {} datasheet's {}", kHbmFloorFactor, spec->id,
                               format_si(it->second.value, "B/s"));
      }
    }
    l.tests[i].push_back(judge_floor("hbm.bandwidth", figure(l.run, "memory.hbm.copy", dev),
                                     hbm_floor, hbm_from, "NVIDIA datasheet; docs/check.md"));
    std::optional<double> link;
    if (g.pcie_gen_max && g.pcie_width_max)
      link = pcie_bytes_per_s(*g.pcie_gen_max, *g.pcie_width_max);
    const std::string link_from =
        link ? fmt::format("{:.2f} x PCIe gen {} x{}'s {} per direction", kHostFloorFactor,
                           *g.pcie_gen_max, *g.pcie_width_max, format_si(*link, "B/s"))
             : std::string("the PCIe link's generation and width are unknown");
    const std::optional<double> floor =
        link ? std::optional<double>(kHostFloorFactor * *link) : std::nullopt;
    for (const char* dir : {"h2d", "d2h"})
      l.tests[i].push_back(judge_floor(fmt::format("host.{}", dir),
                                       figure(l.run, fmt::format("host.{}.pinned", dir), dev),
                                       floor, link_from, "PCI-SIG link rates; docs/check.md"));
  }
  // The node: bits across GPUs of a model, rates against the node's median.
  const std::vector<GemmNodeVerdict> node = judge_node(figures);
  for (size_t k = 0; k < gemms.size() && k < node.size(); ++k)
    for (TestVerdict& t : judge_gemm(node[k], gemms[k].second.valid, gemms[k].second.validation))
      l.tests[gemms[k].first].push_back(std::move(t));
  if (request.baseline) {
    for (const BaselineJudgement& b :
         judge_against_baseline(l.run, *request.baseline, BaselineRules::defaults())) {
      for (size_t i = 0; i < l.start.size(); ++i) {
        if (!l.cuda[i] || *l.cuda[i] != b.gpu) continue;
        const Status s = b.verdict == BaselineVerdict::kPass   ? Status::kPass
                         : b.verdict == BaselineVerdict::kFail ? Status::kFail
                                                               : Status::kSkip;
        l.tests[i].push_back({"baseline." + b.metric, s, b.reason,
                              fmt::format("{:+.0f} % of the baseline", b.limit * 100),
                              "SuperBench data diagnosis rules; docs/compare.md, Baselines"});
      }
    }
  }
  l.run.meta.finished_at = utc_now_iso8601();
  return l;
}

void finish(const nvml::Library& library, const CheckRequest& request, CheckReport& report,
            Level2& l, const std::vector<GpuReadings>* during) {
  report.system = read_system(library);
  report.xid_window_s = request.xid_window_s;
  const std::vector<GpuReadings> end = read_level1(library, request.gpus, request.xid_window_s);
  for (size_t i = 0; i < end.size() && i < l.start.size(); ++i) {
    GpuCheck c;
    c.readings = combine_readings(l.start[i], during ? &(*during)[i] : nullptr, end[i]);
    c.verdict = judge_level1(c.readings);
    const auto cached = request.cached_versions.find(c.readings.uuid);
    c.verdict.tests.push_back(judge_versions(
        report.system.driver_version, report.system.cuda_driver_version,
        cached == request.cached_versions.end() ? CachedVersions{} : cached->second));
    for (TestVerdict& t : l.tests[i])
      c.verdict.tests.push_back(std::move(t));
    c.verdict.status = Status::kPass;
    for (const TestVerdict& t : c.verdict.tests)
      c.verdict.status = worse(c.verdict.status, t.status);
    report.gpus.push_back(std::move(c));
  }
  if (!l.run.system.gpus.empty()) report.run = std::move(l.run);
}

void run_level2(const nvml::Library& library, const CheckRequest& request, CheckReport& report) {
  Level2 l = measure_level2(library, request);
  finish(library, request, report, l, nullptr);
}

void run_level3(const nvml::Library& library, const CheckRequest& request, CheckReport& report) {
  Level2 l = measure_level2(library, request);
  // The load on every visible GPU at once, the NVML watch beside it for as long.
  if (std::none_of(l.cuda.begin(), l.cuda.end(),
                   [](const std::optional<int>& d) { return d.has_value(); })) {
    finish(library, request, report, l, nullptr);  // nothing CUDA sees to load
    return;
  }
  std::vector<GpuReadings> during;  // empty when the watch failed: the end's stands
  std::thread watch([&] {
    try {
      during = read_level1(library, request.gpus, request.duration_s);
    } catch (const Error&) {
      during.clear();
    }
  });
  std::vector<std::optional<SustainedLoad>> loads(l.start.size());
  std::vector<std::string> failures(l.start.size());
  std::vector<std::thread> workers;
  for (size_t i = 0; i < l.start.size(); ++i) {
    if (!l.cuda[i]) continue;
    workers.emplace_back([&, i] {
      SustainedOptions o;
      o.duration_s = request.duration_s;
      if (i == 0)
        o.progress = [&](const std::string& what) {
          progress(request, fmt::format("sustained load: {}", what));
        };
      try {
        loads[i] = run_sustained_load(*l.cuda[i], o);
      } catch (const Error& e) {
        failures[i] = e.what();
      }
    });
  }
  for (std::thread& t : workers)
    t.join();
  watch.join();
  for (size_t i = 0; i < l.start.size(); ++i) {
    if (!l.cuda[i]) continue;
    if (!loads[i]) {
      l.tests[i].push_back({"sustained.load", Status::kFail,
                            "the load stopped with an error: " + failures[i],
                            "the load runs to its end", "gpuvs"});
      continue;
    }
    const SustainedLoad& s = *loads[i];
    const SustainedVerdict v = judge_sustained(s.samples, l.start[i].power_limit_w.value_or(0));
    for (TestVerdict& t : judge_sustained_load(
             v, s.seconds, s.flops > 0 ? std::optional<double>(s.flops) : std::nullopt))
      l.tests[i].push_back(std::move(t));
    MemtestSummary m;
    m.errors = s.memtest_errors;
    m.ranges = s.memtest_ranges;
    m.seconds = s.seconds;
    m.rounds = s.memtest_rounds;
    m.free_bytes = s.memtest_free_bytes;
    m.tested_bytes = s.memtest_tested_bytes;
    l.tests[i].push_back(judge_memtest(m, "sustained.memtest"));
  }
  finish(library, request, report, l, during.size() == l.start.size() ? &during : nullptr);
}

}  // namespace

void register_gpu_levels() {
  register_level({2, "diagnostic",
                  "level 1, then the memory test (>= 90 % of free memory), GEMM consistency "
                  "(BF16, FP32: bits and rate across the node), HBM and host-link bandwidth "
                  "against floors or --baseline; about a minute per GPU",
                  run_level2});
  register_level({3, "sustained",
                  "level 2, then --duration (default 300 s) of GEMMs and the memory test at the "
                  "power limit on every GPU at once, Xid events watched, counters compared",
                  run_level3});
}

}  // namespace gpuvs::check
