#include "report/summary.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <set>
#include <tuple>

#include "core/text.h"
#include "core/units.h"
#include "core/verdict.h"
#include "report/collectives.h"
#include "report/table.h"
#include "suite/produces.h"

namespace gpuvs {

std::string short_gpu_name(const std::string& name) {
  constexpr std::string_view kPrefix = "NVIDIA ";
  if (name.rfind(kPrefix, 0) == 0) return name.substr(kPrefix.size());
  return name;
}

namespace {

std::string gpu_label(const RunFile& run, const Result& r) {
  std::string out;
  for (int d : r.devices) {
    if (!out.empty()) out += ",";
    if (d >= 0 && static_cast<size_t>(d) < run.system.gpus.size())
      out += fmt::format("{} {}", d, short_gpu_name(run.system.gpus[d].name));
    else
      out += std::to_string(d);
  }
  return out.empty() ? "-" : out;
}

// The label of a result: its name, plus what tells apart the points of a sweep (the
// size) or the shapes of a GEMM, so that rows sharing a name can be told apart.
std::string result_label(const Result& r) {
  std::string label = r.name.empty() ? r.id : r.name;
  const auto m = int_parameter(r, "m"), n = int_parameter(r, "n"), k = int_parameter(r, "k");
  if (m && n && k) return fmt::format("{} {}x{}x{}", label, *m, *n, *k);
  if (const auto bytes = int_parameter(r, "bytes"))
    return label + " @ " + format_bytes_binary(*bytes);
  // A model's step time: the median is the value; its tail goes beside the name.
  const auto match = match_result_id(r.id);
  if (match && match->family->family == Family::kModelStepTime && r.stats.samples > 1 &&
      r.stats.p99)
    return fmt::format("{} (p99 {})", label, format_si(*r.stats.p99, "s"));
  return label;
}

std::string clock_cell(const Result& r) {
  if (!r.clocks || !r.clocks->sm_mhz_median) return "-";
  const ClockRecord& c = *r.clocks;
  if (c.sm_mhz_min && c.sm_mhz_max && *c.sm_mhz_min != *c.sm_mhz_max)
    return fmt::format("{} ({}-{})", *c.sm_mhz_median, *c.sm_mhz_min, *c.sm_mhz_max);
  return std::to_string(*c.sm_mhz_median);
}

std::string status_cell(const Result& r) {
  if (r.status != Status::kOk) return fmt::format("{}: {}", to_string(r.status), r.status_reason);
  const std::string events = clock_event_text(r);
  return events.empty() ? "ok" : "ok, " + events;
}

// The time a GPU spent under each clock-event reason of a step, power capping told
// apart from slowdowns: "power-capped 3.2 s", "throttled: hw_slowdown 0.5 s".
std::string clock_event_seconds(const GpuUtilization& g) {
  std::vector<std::string> parts;
  for (const auto& [reason, s] : g.throttle_s_by_reason) {
    if (reason == "gpu_idle" || s <= 0) continue;
    if (is_power_cap_reason(reason))
      parts.insert(parts.begin(), fmt::format("power-capped {:.1f} s", s));
    else
      parts.push_back(fmt::format(
          "{}{} {:.1f} s", is_throttling_reason(reason) ? "throttled: " : "", one_line(reason), s));
  }
  // Files without the seconds per reason: the total, as recorded.
  if (parts.empty()) return fmt::format("clock events {:.1f} s", g.throttled_s);
  return fmt::format("{}", fmt::join(parts, ", "));
}

// One line per benchmark step and GPU with what the monitor saw in the step's window
// (docs/monitor.md); only the figures present. Empty when the run was not monitored.
std::string utilization_lines(const RunFile& run) {
  std::string out;
  std::set<std::tuple<double, double, std::string>> seen;
  for (const Result& r : run.results) {
    if (!r.utilization ||
        !seen.emplace(r.utilization->t_begin_s, r.utilization->t_end_s, r.utilization->step).second)
      continue;
    const Utilization& u = *r.utilization;
    for (const GpuUtilization& g : u.gpus) {
      std::vector<std::string> parts;
      const auto pct = [&](const char* what, const std::optional<UtilDistribution>& d) {
        if (d) parts.push_back(fmt::format("{} {:.0f} %", what, d->mean));
      };
      pct("SM", g.sm_util_pct);
      pct("tensor", g.tensor_util_pct);
      pct("DRAM", g.dram_bw_util_pct);
      if (!g.sm_util_pct) pct("GPU util", g.gpu_util_pct);
      if (g.power_w_mean)
        parts.push_back(fmt::format("{:.0f} W (max {:.0f})", *g.power_w_mean,
                                    g.power_w_max.value_or(*g.power_w_mean)));
      if (g.throttled_s > 0) parts.push_back(clock_event_seconds(g));
      if (parts.empty()) continue;
      const std::string gpu =
          g.gpu >= 0 && static_cast<size_t>(g.gpu) < run.system.gpus.size()
              ? fmt::format("GPU {} {}", g.gpu,
                            one_line(short_gpu_name(run.system.gpus[g.gpu].name)))
              : fmt::format("GPU {}", g.gpu);
      out += fmt::format("  {} on {}, {:.1f} s: {}\n", u.step, gpu, u.t_end_s - u.t_begin_s,
                         fmt::join(parts, ", "));
    }
  }
  return out.empty() ? out : "utilization (mean over each step):\n" + out;
}

}  // namespace

std::string render_summary(const RunFile& run) {
  using A = TextTable::Align;
  TextTable t({"result", "GPU", "value", "noise", "n", "of peak", "SM MHz", "status"},
              {A::kLeft, A::kLeft, A::kRight, A::kRight, A::kRight, A::kLeft, A::kRight, A::kLeft});
  size_t collective = 0;  // shown by render_collectives, in tables by operation
  for (const Result& r : run.results) {
    if (is_collective_result(r)) {
      ++collective;
      continue;
    }
    const bool ok = r.status == Status::kOk;
    std::string peak = "-";
    if (ok && r.efficiency && r.peak)
      peak = fmt::format("{:.1f} % ({})", *r.efficiency * 100, r.peak->kind);
    t.add_row({result_label(r), gpu_label(run, r), ok ? format_si(r.value, r.unit) : "-",
               // One sample (a quantity: memory, a batch size) has no noise to show.
               ok && r.stats.samples > 1 ? fmt::format("{:.2f} %", r.stats.noise * 100) : "-",
               std::to_string(r.stats.samples), peak, clock_cell(r), status_cell(r)});
  }
  std::string out = t.rows() > 0 || collective == 0 ? t.render() : "";
  if (const std::string c = render_collectives(run); !c.empty())
    out += (out.empty() ? "" : "\n") + c;
  if (const std::string u = utilization_lines(run); !u.empty())
    out += (out.empty() ? "" : "\n") + u;
  for (const RunError& e : run.errors)
    out += fmt::format("error: {}: {}\n", one_line(e.context), one_line(e.message));
  return out;
}

namespace {

template <class T>
std::string opt(const std::optional<T>& v, std::string_view unit = "") {
  if (!v) return "n/a";
  if constexpr (std::is_same_v<T, bool>) return *v ? "on" : "off";
  if constexpr (std::is_same_v<T, double>) return fmt::format("{:.0f}{}", *v, unit);
  if constexpr (std::is_same_v<T, std::string>) return *v;
  if constexpr (std::is_integral_v<T>) return fmt::format("{}{}", *v, unit);
  return "n/a";
}

std::string current_of_max(const std::optional<int>& cur, const std::optional<int>& max,
                           std::string_view unit) {
  if (!cur && !max) return "n/a";
  return fmt::format("{} of {}{}", opt(cur), opt(max), unit);
}

}  // namespace

std::string render_system(const SystemInfo& s) {
  std::string out;
  out += fmt::format("host     {}\n", one_line(s.os));
  out += fmt::format("cpu      {} ({} logical cores, {} memory)\n", one_line(s.cpu.model),
                     opt(s.cpu.logical_cores),
                     s.cpu.memory_bytes ? format_bytes_binary(*s.cpu.memory_bytes) : "n/a");
  out += one_line(fmt::format("driver   {}   CUDA driver {}   runtime {}", opt(s.driver_version),
                              opt(s.cuda_driver_version), opt(s.cuda_runtime_version))) +
         "\n";
  out += one_line(fmt::format("libs     cuBLAS {}   cuDNN {}   NCCL {}", opt(s.cublas_version),
                              opt(s.cudnn_version), opt(s.nccl_version))) +
         "\n";
  for (const GpuInfo& g : s.gpus) {
    out += fmt::format("\nGPU {}    {}\n", g.index, one_line(g.name));
    TextTable t({"field", "value"});
    t.add_row({"uuid", g.uuid});
    t.add_row({"pci bus id", g.pci_bus_id});
    t.add_row(
        {"pci device id", g.pci_device_id ? fmt::format("0x{:08X}", *g.pci_device_id) : "n/a"});
    t.add_row({"compute capability", g.compute_capability});
    t.add_row({"SMs", std::to_string(g.sm_count)});
    t.add_row({"memory", format_bytes_binary(g.memory_total_bytes)});
    t.add_row({"memory bus", opt(g.memory_bus_width_bits, " bit")});
    t.add_row({"L2", format_bytes_binary(g.l2_bytes)});
    t.add_row({"SM clock", current_of_max(g.sm_clock_mhz, g.sm_clock_max_mhz, " MHz")});
    t.add_row({"memory clock", current_of_max(g.mem_clock_mhz, g.mem_clock_max_mhz, " MHz")});
    t.add_row({"power limit", fmt::format("{} (default {})", opt(g.power_limit_w, " W"),
                                          opt(g.power_default_limit_w, " W"))});
    t.add_row({"PCIe",
               fmt::format("gen {} x{} (max gen {} x{})", opt(g.pcie_gen_current),
                           opt(g.pcie_width_current), opt(g.pcie_gen_max), opt(g.pcie_width_max))});
    t.add_row({"ECC", opt(g.ecc_enabled)});
    t.add_row({"MIG", opt(g.mig_enabled)});
    t.add_row({"VBIOS", opt(g.vbios_version)});
    int active = 0;
    for (const NvLinkInfo& l : g.nvlinks)
      active += l.active ? 1 : 0;
    std::string nv = g.nvlinks.empty()
                         ? "none reported"
                         : fmt::format("{} of {} links active", active, g.nvlinks.size());
    for (const NvLinkInfo& l : g.nvlinks) {
      if (!l.active) continue;
      nv += fmt::format("; link {}: v{}", l.link, opt(l.version));
      if (l.remote_pci_bus_id) nv += " -> " + *l.remote_pci_bus_id;
    }
    t.add_row({"NVLink", nv});
    out += t.render();
  }
  return out;
}

}  // namespace gpuvs
