#include "check/output.h"

#include <fmt/format.h>

#include <optional>

#include "core/text.h"
#include "monitor/summary.h"

namespace gpuvs::check {

namespace {

std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

template <class T>
nlohmann::ordered_json optional_json(const std::optional<T>& v) {
  return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr);
}

nlohmann::ordered_json counters_json(const Counters& c) {
  nlohmann::ordered_json links = nlohmann::ordered_json::array();
  for (const NvLinkCounters& l : c.nvlinks)
    links.push_back({{"link", l.link},
                     {"replay", optional_json(l.replay)},
                     {"recovery", optional_json(l.recovery)},
                     {"crc_flit", optional_json(l.crc_flit)},
                     {"crc_data", optional_json(l.crc_data)}});
  return {{"ecc_corrected_volatile", optional_json(c.ecc_corrected_volatile)},
          {"ecc_corrected_aggregate", optional_json(c.ecc_corrected_aggregate)},
          {"ecc_uncorrected_volatile", optional_json(c.ecc_uncorrected_volatile)},
          {"ecc_uncorrected_aggregate", optional_json(c.ecc_uncorrected_aggregate)},
          {"pcie_replay", optional_json(c.pcie_replay)},
          {"nvlinks", links}};
}

nlohmann::ordered_json readings_json(const GpuReadings& r) {
  nlohmann::ordered_json links = nlohmann::ordered_json::array();
  for (const LinkState& l : r.nvlinks)
    links.push_back({{"link", l.link}, {"active", l.active}});
  nlohmann::ordered_json remap = nullptr;
  if (r.remap)
    remap = {{"corrected", r.remap->corrected},
             {"uncorrected", r.remap->uncorrected},
             {"pending", r.remap->pending},
             {"failure", r.remap->failure}};
  nlohmann::ordered_json histogram = nullptr;
  if (r.remap_histogram)
    histogram = {{"max", r.remap_histogram->max},
                 {"high", r.remap_histogram->high},
                 {"partial", r.remap_histogram->partial},
                 {"low", r.remap_histogram->low},
                 {"none", r.remap_histogram->none}};
  return {{"ecc_enabled", optional_json(r.ecc_enabled)},
          {"first", counters_json(r.first)},
          {"last", counters_json(r.last)},
          {"retired_pages_sbe", optional_json(r.retired_pages_sbe)},
          {"retired_pages_dbe", optional_json(r.retired_pages_dbe)},
          {"retired_pages_pending", optional_json(r.retired_pages_pending)},
          {"row_remap", remap},
          {"row_remap_histogram", histogram},
          {"xid_watched", r.xid_watched},
          {"xids", r.xids},
          {"pcie_gen", optional_json(r.pcie_gen)},
          {"pcie_gen_max", optional_json(r.pcie_gen_max)},
          {"pcie_width", optional_json(r.pcie_width)},
          {"pcie_width_max", optional_json(r.pcie_width_max)},
          {"nvlinks", links},
          {"clock_event_reasons",
           r.clock_event_reasons
               ? nlohmann::ordered_json(nvml::throttle_reason_names(*r.clock_event_reasons))
               : nlohmann::ordered_json(nullptr)},
          {"persistence_mode", optional_json(r.persistence_mode)},
          {"power_limit_w", optional_json(r.power_limit_w)},
          {"power_default_limit_w", optional_json(r.power_default_limit_w)},
          {"mig_enabled", optional_json(r.mig_enabled)},
          {"temperature_c", optional_json(r.temperature_c)},
          {"temperature_slowdown_c", optional_json(r.temperature_slowdown_c)},
          {"temperature_max_operating_c", optional_json(r.temperature_max_operating_c)}};
}

}  // namespace

std::string render_text(const CheckReport& report) {
  std::string out;
  int counts[3] = {};
  for (const GpuCheck& g : report.gpus) {
    const GpuReadings& r = g.readings;
    out += fmt::format("GPU {}  {}  {}  {}: {}\n", r.index, one_line(r.name), one_line(r.uuid),
                       one_line(r.pci_bus_id), upper(status_name(g.verdict.status)));
    for (const TestVerdict& t : g.verdict.tests)
      out +=
          fmt::format("  {:<4}  {:<20}  {}\n", status_name(t.status), t.test, one_line(t.reason));
    ++counts[status_level(g.verdict.status)];
  }
  out += fmt::format("check level {}: {} GPU(s): {} pass, {} warn, {} fail ({:.1f} s): {}\n",
                     report.level, report.gpus.size(), counts[0], counts[1], counts[2],
                     report.seconds, upper(status_name(report.status)));
  return out;
}

nlohmann::ordered_json to_json(const CheckReport& report) {
  nlohmann::ordered_json gpus = nlohmann::ordered_json::array();
  for (const GpuCheck& g : report.gpus) {
    nlohmann::ordered_json tests = nlohmann::ordered_json::array();
    for (const TestVerdict& t : g.verdict.tests)
      tests.push_back({{"test", t.test},
                       {"status", status_name(t.status)},
                       {"reason", t.reason},
                       {"threshold", t.threshold},
                       {"source", t.source}});
    gpus.push_back({{"gpu", g.readings.index},
                    {"name", g.readings.name},
                    {"uuid", g.readings.uuid},
                    {"pci_bus_id", g.readings.pci_bus_id},
                    {"status", status_name(g.verdict.status)},
                    {"tests", tests},
                    {"readings", readings_json(g.readings)}});
  }
  nlohmann::ordered_json doc;
  doc["schema"] = kCheckSchema;
  doc["version"] = report.tool_version;
  doc["level"] = report.level;
  doc["host"] = report.host;
  doc["started_at"] = report.started_at;
  doc["seconds"] = report.seconds;
  doc["driver_version"] = optional_json(report.system.driver_version);
  doc["cuda_driver_version"] = optional_json(report.system.cuda_driver_version);
  doc["xid_window_s"] = report.xid_window_s;
  doc["status"] = status_name(report.status);
  doc["exit_code"] = static_cast<int>(report.exit_code);
  doc["gpus"] = gpus;
  return doc;
}

namespace {

// One metric: HELP and TYPE, then one line per (GPU, extra labels); none without lines.
struct PromMetric {
  const char* name;
  const char* help;
  std::string lines;
};

void add_counter_lines(const Counters& c, const std::string& gpu,
                       std::vector<PromMetric>& metrics) {
  auto add = [&](size_t m, const std::string& extra, const auto& value) {
    if (value)
      metrics[m].lines += fmt::format("{}{{{}{}}} {}\n", metrics[m].name, gpu, extra, *value);
  };
  add(2, ",type=\"corrected\",counter=\"volatile\"", c.ecc_corrected_volatile);
  add(2, ",type=\"corrected\",counter=\"aggregate\"", c.ecc_corrected_aggregate);
  add(2, ",type=\"uncorrected\",counter=\"volatile\"", c.ecc_uncorrected_volatile);
  add(2, ",type=\"uncorrected\",counter=\"aggregate\"", c.ecc_uncorrected_aggregate);
  add(3, "", c.pcie_replay);
  for (const NvLinkCounters& l : c.nvlinks) {
    add(4, fmt::format(",link=\"{}\",counter=\"replay\"", l.link), l.replay);
    add(4, fmt::format(",link=\"{}\",counter=\"recovery\"", l.link), l.recovery);
    add(4, fmt::format(",link=\"{}\",counter=\"crc_flit\"", l.link), l.crc_flit);
    add(4, fmt::format(",link=\"{}\",counter=\"crc_data\"", l.link), l.crc_data);
  }
}

}  // namespace

std::string prometheus_text(const CheckReport& report) {
  std::vector<PromMetric> metrics = {
      {"gpuvs_check_status", "The GPU's check verdict: 0 pass, 1 warn, 2 fail.", ""},
      {"gpuvs_check_test", "One check test's verdict: 0 pass, 1 warn, 2 fail.", ""},
      {"gpuvs_check_ecc_errors", "ECC error count by type and counter (NVML).", ""},
      {"gpuvs_check_pcie_replays", "PCIe replay counter (NVML).", ""},
      {"gpuvs_check_nvlink_errors", "NVLink error counter by link and counter (NVML).", ""},
      {"gpuvs_check_xid_events", "Xid critical errors seen during the check window.", ""},
      {"gpuvs_check_remapped_rows", "Rows remapped by cause (NVML).", ""},
  };
  const std::string host = monitor::prometheus_escape_label(report.host);
  for (const GpuCheck& g : report.gpus) {
    const GpuReadings& r = g.readings;
    const std::string gpu = fmt::format("host=\"{}\",gpu=\"{}\",uuid=\"{}\",pci_bus_id=\"{}\"",
                                        host, r.index, monitor::prometheus_escape_label(r.uuid),
                                        monitor::prometheus_escape_label(r.pci_bus_id));
    metrics[0].lines +=
        fmt::format("gpuvs_check_status{{{}}} {}\n", gpu, status_level(g.verdict.status));
    for (const TestVerdict& t : g.verdict.tests)
      if (t.status != Status::kSkip)
        metrics[1].lines += fmt::format("gpuvs_check_test{{{},test=\"{}\"}} {}\n", gpu, t.test,
                                        status_level(t.status));
    add_counter_lines(r.last, gpu, metrics);
    if (r.xid_watched)
      metrics[5].lines += fmt::format("gpuvs_check_xid_events{{{}}} {}\n", gpu, r.xids.size());
    if (r.remap)
      metrics[6].lines += fmt::format(
          "gpuvs_check_remapped_rows{{{},cause=\"correctable\"}} {}\n"
          "gpuvs_check_remapped_rows{{{},cause=\"uncorrectable\"}} {}\n",
          gpu, r.remap->corrected, gpu, r.remap->uncorrected);
  }
  std::string out;
  for (const PromMetric& m : metrics) {
    if (m.lines.empty()) continue;
    out += fmt::format("# HELP {} {}\n# TYPE {} gauge\n", m.name, m.help, m.name);
    out += m.lines;
  }
  return out;
}

}  // namespace gpuvs::check
