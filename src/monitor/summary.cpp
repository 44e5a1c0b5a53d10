// Summaries and renderings of a monitor timeline; see summary.h for the conventions
// and the metric and column names.
#include "monitor/summary.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <ctime>
#include <iterator>
#include <string_view>
#include <utility>

#include "core/stats.h"
#include "core/text.h"

namespace gpuvs::monitor {

namespace {

// One numeric field of GpuSample, shared by the CSV, the JSON and Prometheus.
struct Field {
  const char* key;  // CSV column and JSON key
  bool is_int;      // written as an integer in JSON
  std::optional<double> (*get)(const GpuSample&);
};

template <class T>
std::optional<double> to_double(const std::optional<T>& v) {
  if (!v) return std::nullopt;
  return static_cast<double>(*v);
}

#define GPUVS_FIELD(name, is_int)                                       \
  Field {                                                               \
#name, is_int, [](const GpuSample& s) { return to_double(s.name); } \
  }

// The CSV/JSON column order (summary.h lists it; keep both in step).
const Field kFields[] = {
    GPUVS_FIELD(gpu_util_pct, false),
    GPUVS_FIELD(mem_util_pct, false),
    GPUVS_FIELD(sm_util_pct, false),
    GPUVS_FIELD(sm_occupancy_pct, false),
    GPUVS_FIELD(tensor_util_pct, false),
    GPUVS_FIELD(dram_bw_util_pct, false),
    GPUVS_FIELD(fp64_util_pct, false),
    GPUVS_FIELD(fp32_util_pct, false),
    GPUVS_FIELD(fp16_util_pct, false),
    GPUVS_FIELD(pcie_rx_bytes_per_s, false),
    GPUVS_FIELD(pcie_tx_bytes_per_s, false),
    GPUVS_FIELD(nvlink_rx_bytes_per_s, false),
    GPUVS_FIELD(nvlink_tx_bytes_per_s, false),
    GPUVS_FIELD(power_w, false),
    GPUVS_FIELD(energy_j, false),
    GPUVS_FIELD(sm_mhz, true),
    GPUVS_FIELD(mem_mhz, true),
    GPUVS_FIELD(temperature_c, true),
};

#undef GPUVS_FIELD

struct PromMetric {
  const char* name;
  const char* help;
  double scale;  // sample value * scale = exposed value (MHz -> Hz)
  std::optional<double> (*get)(const GpuSample&);
};

#define GPUVS_PROM(metric, help, scale, field)                                 \
  PromMetric {                                                                 \
    metric, help, scale, [](const GpuSample& s) { return to_double(s.field); } \
  }

const PromMetric kPromMetrics[] = {
    GPUVS_PROM("gpuvs_gpu_utilization_percent",
               "NVML GPU utilization: percent of time some kernel ran.", 1, gpu_util_pct),
    GPUVS_PROM("gpuvs_gpu_memory_utilization_percent",
               "NVML memory utilization: percent of time device memory was read or written.", 1,
               mem_util_pct),
    GPUVS_PROM("gpuvs_gpu_sm_utilization_percent",
               "GPM: percent of SMs busy over the last interval.", 1, sm_util_pct),
    GPUVS_PROM("gpuvs_gpu_sm_occupancy_percent",
               "GPM: resident warps as percent of the maximum over the last interval.", 1,
               sm_occupancy_pct),
    GPUVS_PROM("gpuvs_gpu_tensor_utilization_percent",
               "GPM: percent of time any tensor pipe was active over the last interval.", 1,
               tensor_util_pct),
    GPUVS_PROM("gpuvs_gpu_dram_bandwidth_utilization_percent",
               "GPM: DRAM bandwidth used as percent of peak over the last interval.", 1,
               dram_bw_util_pct),
    GPUVS_PROM("gpuvs_gpu_fp64_utilization_percent",
               "GPM: non-tensor FP64 pipe activity in percent over the last interval.", 1,
               fp64_util_pct),
    GPUVS_PROM("gpuvs_gpu_fp32_utilization_percent",
               "GPM: non-tensor FP32 pipe activity in percent over the last interval.", 1,
               fp32_util_pct),
    GPUVS_PROM("gpuvs_gpu_fp16_utilization_percent",
               "GPM: non-tensor FP16 pipe activity in percent over the last interval.", 1,
               fp16_util_pct),
    GPUVS_PROM("gpuvs_gpu_pcie_rx_bytes_per_second",
               "GPM: PCIe traffic to the GPU over the last interval.", 1, pcie_rx_bytes_per_s),
    GPUVS_PROM("gpuvs_gpu_pcie_tx_bytes_per_second",
               "GPM: PCIe traffic from the GPU over the last interval.", 1, pcie_tx_bytes_per_s),
    GPUVS_PROM("gpuvs_gpu_nvlink_rx_bytes_per_second",
               "GPM: NVLink traffic received on all links over the last interval.", 1,
               nvlink_rx_bytes_per_s),
    GPUVS_PROM("gpuvs_gpu_nvlink_tx_bytes_per_second",
               "GPM: NVLink traffic sent on all links over the last interval.", 1,
               nvlink_tx_bytes_per_s),
    GPUVS_PROM("gpuvs_gpu_power_watts", "Board power draw.", 1, power_w),
    GPUVS_PROM("gpuvs_gpu_energy_joules_total",
               "Energy used since the monitor started (a counter: it starts again at 0 when a "
               "new monitor starts, which rate() and increase() take as a reset).",
               1, energy_j),
    GPUVS_PROM("gpuvs_gpu_sm_clock_hertz", "SM clock.", 1e6, sm_mhz),
    GPUVS_PROM("gpuvs_gpu_memory_clock_hertz", "Memory clock.", 1e6, mem_mhz),
    GPUVS_PROM("gpuvs_gpu_temperature_celsius", "GPU core temperature.", 1, temperature_c),
    PromMetric{"gpuvs_monitor_sample_time_seconds",
               "When the sample was taken, in seconds since the monitor started.", 1,
               [](const GpuSample& s) { return std::optional<double>(s.t_s); }},
};

#undef GPUVS_PROM

// Shortest text that reads back as the same double ("97.5", "1980", "0.1").
std::string number(double v) {
  return fmt::format("{}", v);
}

std::optional<Distribution> distribution(const std::vector<GpuSample>& samples,
                                         std::optional<double> GpuSample::*field) {
  std::vector<double> values;
  for (const GpuSample& s : samples)
    if (s.*field && std::isfinite(*(s.*field))) values.push_back(*(s.*field));
  if (values.empty()) return std::nullopt;
  double sum = 0;
  for (double v : values)
    sum += v;
  Distribution d;
  d.mean = sum / static_cast<double>(values.size());
  d.p95 = percentile_nearest_rank(values, 95).value_or(d.mean);
  return d;
}

GpuSummary summarize_one(int gpu, std::vector<GpuSample> samples, const std::string& name) {
  std::stable_sort(samples.begin(), samples.end(),
                   [](const GpuSample& a, const GpuSample& b) { return a.t_s < b.t_s; });
  GpuSummary out;
  out.gpu = gpu;
  out.name = name;
  out.samples = static_cast<int>(samples.size());
  if (samples.empty()) return out;
  out.duration_s = samples.back().t_s - samples.front().t_s;
  out.sm_util_pct = distribution(samples, &GpuSample::sm_util_pct);
  out.tensor_util_pct = distribution(samples, &GpuSample::tensor_util_pct);
  out.dram_bw_util_pct = distribution(samples, &GpuSample::dram_bw_util_pct);
  out.gpu_util_pct = distribution(samples, &GpuSample::gpu_util_pct);

  double power_sum = 0;
  int power_n = 0;
  std::optional<double> first_energy;
  std::optional<double> last_energy;
  for (size_t i = 0; i < samples.size(); ++i) {
    const GpuSample& s = samples[i];
    if (s.power_w) {
      power_sum += *s.power_w;
      ++power_n;
      out.power_w_max = std::max(out.power_w_max.value_or(*s.power_w), *s.power_w);
    }
    if (s.energy_j) {
      if (!first_energy) first_energy = s.energy_j;
      last_energy = s.energy_j;
    }
    if (i == 0) continue;  // the first sample stands for no time
    const double dt = s.t_s - samples[i - 1].t_s;
    bool throttled = false;
    for (const std::string& reason : s.throttle_reasons) {
      out.throttle_s_by_reason[reason] += dt;
      if (reason != "gpu_idle") throttled = true;
    }
    if (throttled) out.throttled_s += dt;
  }
  if (power_n > 0) out.power_w_mean = power_sum / power_n;
  if (first_energy) out.energy_j = *last_energy - *first_energy;
  return out;
}

}  // namespace

std::vector<GpuSummary> summarize(const std::vector<GpuSample>& timeline,
                                  const std::vector<std::string>& names) {
  std::map<int, std::vector<GpuSample>> by_gpu;
  for (const GpuSample& s : timeline)
    by_gpu[s.gpu].push_back(s);
  std::vector<GpuSummary> out;
  for (auto& [gpu, samples] : by_gpu) {
    const std::string name =
        gpu >= 0 && static_cast<size_t>(gpu) < names.size() ? names[static_cast<size_t>(gpu)] : "";
    out.push_back(summarize_one(gpu, std::move(samples), name));
  }
  return out;
}

std::vector<GpuSample> slice(const std::vector<GpuSample>& timeline, double t_begin, double t_end) {
  std::vector<GpuSample> out;
  std::copy_if(timeline.begin(), timeline.end(), std::back_inserter(out),
               [&](const GpuSample& s) { return s.t_s >= t_begin && s.t_s <= t_end; });
  return out;
}

// ---- text table ----------------------------------------------------------------------

namespace {

std::string cell(const std::optional<Distribution>& d) {
  if (!d) return "-";
  return fmt::format("{:.1f} / {:.1f}", d->mean, d->p95);
}

std::string cell(const std::optional<double>& v, int decimals) {
  if (!v) return "-";
  return fmt::format("{:.{}f}", *v, decimals);
}

}  // namespace

std::string render_summary_text(const std::vector<GpuSummary>& summaries) {
  if (summaries.empty()) return "no samples\n";
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"GPU", "name", "time s", "SM util %", "tensor %", "DRAM bw %", "GPU util %",
                  "power W", "energy J", "throttled s"});
  rows.push_back(
      {"", "", "", "mean / p95", "mean / p95", "mean / p95", "mean / p95", "mean / max", "", ""});
  for (const GpuSummary& s : summaries) {
    std::string power = "-";
    if (s.power_w_mean && s.power_w_max)
      power = fmt::format("{:.0f} / {:.0f}", *s.power_w_mean, *s.power_w_max);
    rows.push_back({std::to_string(s.gpu), s.name.empty() ? "-" : s.name,
                    fmt::format("{:.1f}", s.duration_s), cell(s.sm_util_pct),
                    cell(s.tensor_util_pct), cell(s.dram_bw_util_pct), cell(s.gpu_util_pct), power,
                    cell(s.energy_j, 0), fmt::format("{:.1f}", s.throttled_s)});
  }
  std::vector<size_t> width(rows.front().size(), 0);
  for (const auto& row : rows)
    for (size_t c = 0; c < row.size(); ++c)
      width[c] = std::max(width[c], row[c].size());
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      if (c > 0) line += "  ";
      // Text columns (GPU, name) to the left, figures to the right.
      line +=
          c < 2 ? fmt::format("{:<{}}", row[c], width[c]) : fmt::format("{:>{}}", row[c], width[c]);
    }
    while (!line.empty() && line.back() == ' ')
      line.pop_back();
    out += line + "\n";
  }
  for (const GpuSummary& s : summaries) {
    if (s.throttle_s_by_reason.empty()) continue;
    std::string reasons;
    for (const auto& [reason, seconds] : s.throttle_s_by_reason) {
      if (!reasons.empty()) reasons += ", ";
      reasons += fmt::format("{} {:.1f} s", reason, seconds);
    }
    out += fmt::format("GPU {} clock-event reasons: {}\n", s.gpu, reasons);
  }
  return out;
}

// ---- Prometheus ----------------------------------------------------------------------

std::string prometheus_escape_label(const std::string& value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string prometheus_text(const std::vector<GpuSample>& latest, const MonitorContext& context) {
  std::vector<GpuSample> samples = latest;
  std::stable_sort(samples.begin(), samples.end(),
                   [](const GpuSample& a, const GpuSample& b) { return a.gpu < b.gpu; });
  auto labels = [&](const GpuSample& s) {
    const GpuIdentity id = s.gpu >= 0 && static_cast<size_t>(s.gpu) < context.gpus.size()
                               ? context.gpus[static_cast<size_t>(s.gpu)]
                               : GpuIdentity{};
    return fmt::format("gpu=\"{}\",name=\"{}\",uuid=\"{}\",pci_bus_id=\"{}\",host=\"{}\"", s.gpu,
                       prometheus_escape_label(id.name), prometheus_escape_label(id.uuid),
                       prometheus_escape_label(id.pci_bus_id),
                       prometheus_escape_label(context.host));
  };
  std::string out;
  for (const PromMetric& m : kPromMetrics) {
    std::string lines;
    for (const GpuSample& s : samples)
      if (std::optional<double> v = m.get(s))
        lines += fmt::format("{}{{{}}} {}\n", m.name, labels(s), number(*v * m.scale));
    if (lines.empty()) continue;
    const bool counter = std::string_view(m.name).ends_with("_total");
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", m.name, m.help, m.name,
                       counter ? "counter" : "gauge");
    out += lines;
  }
  if (!samples.empty() && context.start_unix_s > 0) {
    out +=
        "# HELP gpuvs_monitor_start_time_seconds When the monitor started, in seconds since "
        "the Unix epoch (sample times are relative to it).\n"
        "# TYPE gpuvs_monitor_start_time_seconds gauge\n";
    for (const GpuSample& s : samples)
      out += fmt::format("gpuvs_monitor_start_time_seconds{{{}}} {:.3f}\n", labels(s),
                         context.start_unix_s);
  }
  std::string reasons;
  for (const GpuSample& s : samples)
    for (const std::string& r : s.throttle_reasons)
      reasons += fmt::format("gpuvs_gpu_clock_event_reason{{{},reason=\"{}\"}} 1\n", labels(s),
                             prometheus_escape_label(r));
  if (!reasons.empty()) {
    out +=
        "# HELP gpuvs_gpu_clock_event_reason 1 for each clock-event (throttle) reason active "
        "now.\n# TYPE gpuvs_gpu_clock_event_reason gauge\n";
    out += reasons;
  }
  return out;
}

// ---- CSV and JSON --------------------------------------------------------------------

namespace {

std::string join_reasons(const std::vector<std::string>& reasons) {
  std::string out;
  for (const std::string& r : reasons) {
    if (!out.empty()) out += ';';
    out += r;
  }
  return out;
}

}  // namespace

std::string iso8601_utc(double unix_s) {
  const auto whole = static_cast<std::time_t>(std::floor(unix_s));
  int ms = static_cast<int>(std::lround((unix_s - double(whole)) * 1000));
  std::time_t t = whole;
  if (ms == 1000) {
    ++t;
    ms = 0;
  }
  std::tm tm{};
  gmtime_r(&t, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
}

std::string timeline_csv(const std::vector<GpuSample>& timeline, const MonitorContext* context) {
  std::vector<CsvCell> header = {"gpu", "t_s"};
  for (const Field& f : kFields)
    header.emplace_back(f.key);
  header.emplace_back("throttle_reasons");
  if (context)
    for (const char* c : {"host", "uuid", "pci_bus_id", "time_utc"})
      header.emplace_back(c);
  std::string out = csv_line(header);
  for (const GpuSample& s : timeline) {
    std::vector<CsvCell> row = {CsvCell::integer(s.gpu), CsvCell::number(s.t_s)};
    for (const Field& f : kFields)
      row.push_back(CsvCell::number(f.get(s)));
    row.emplace_back(join_reasons(s.throttle_reasons));
    if (context) {
      const GpuIdentity id = s.gpu >= 0 && static_cast<size_t>(s.gpu) < context->gpus.size()
                                 ? context->gpus[static_cast<size_t>(s.gpu)]
                                 : GpuIdentity{};
      row.emplace_back(context->host);
      row.emplace_back(id.uuid);
      row.emplace_back(id.pci_bus_id);
      row.emplace_back(iso8601_utc(context->start_unix_s + s.t_s));
    }
    out += csv_line(row);
  }
  return out;
}

nlohmann::ordered_json timeline_json(const std::vector<GpuSample>& timeline) {
  nlohmann::ordered_json array = nlohmann::ordered_json::array();
  for (const GpuSample& s : timeline) {
    nlohmann::ordered_json o;
    o["gpu"] = s.gpu;
    o["t_s"] = s.t_s;
    for (const Field& f : kFields) {
      // A reading that is not a finite number (a GPM interval NVML could not rate) is
      // left out like an absent one: JSON has no NaN, and a null would read as a value.
      if (std::optional<double> v = f.get(s); v && std::isfinite(*v)) {
        if (f.is_int)
          o[f.key] = static_cast<long long>(*v);
        else
          o[f.key] = *v;
      }
    }
    o["throttle_reasons"] = s.throttle_reasons;
    array.push_back(std::move(o));
  }
  return array;
}

nlohmann::ordered_json summary_json(const std::vector<GpuSummary>& summaries) {
  nlohmann::ordered_json array = nlohmann::ordered_json::array();
  auto put = [](nlohmann::ordered_json& o, const char* key, const std::optional<Distribution>& d) {
    if (d) o[key] = {{"mean", d->mean}, {"p95", d->p95}};
  };
  for (const GpuSummary& s : summaries) {
    nlohmann::ordered_json o;
    o["gpu"] = s.gpu;
    if (!s.name.empty()) o["name"] = s.name;
    o["samples"] = s.samples;
    o["duration_s"] = s.duration_s;
    put(o, "sm_util_pct", s.sm_util_pct);
    put(o, "tensor_util_pct", s.tensor_util_pct);
    put(o, "dram_bw_util_pct", s.dram_bw_util_pct);
    put(o, "gpu_util_pct", s.gpu_util_pct);
    if (s.power_w_mean) o["power_w_mean"] = *s.power_w_mean;
    if (s.power_w_max) o["power_w_max"] = *s.power_w_max;
    if (s.energy_j) o["energy_j"] = *s.energy_j;
    o["throttled_s"] = s.throttled_s;
    nlohmann::ordered_json reasons = nlohmann::ordered_json::object();
    for (const auto& [reason, seconds] : s.throttle_s_by_reason)
      reasons[reason] = seconds;
    o["throttle_s_by_reason"] = std::move(reasons);
    array.push_back(std::move(o));
  }
  return array;
}

}  // namespace gpuvs::monitor
