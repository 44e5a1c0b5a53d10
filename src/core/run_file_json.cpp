// The mapping between RunFile and its JSON document (schema gpuvs.run/1).
//
// Writing: nlohmann::ordered_json, so keys come out in struct order, which is the
// order docs/results.md documents. Reading: every non-optional field is required;
// an optional field may be missing or null (both read as nullopt); unknown keys are
// ignored so that later 1.x writers can add fields. Integer fields take only JSON
// integers (no fraction or exponent) within the range of the C++ type; number fields
// take any finite number. The validation rules of docs/results.md are checked as
// the fields are read, so a message names the first offending field.
#include "core/run_file_json.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>
#include <map>
#include <type_traits>
#include <utility>

#include <fmt/format.h>

#include "core/error.h"
#include "core/run_file_reader.h"
#include "core/units.h"

namespace gpuvs::run_json {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

// ---------------------------------------------------------------- writing

namespace {

ojson to_json(const GpuInfo& g) {
  ojson links = ojson::array();
  for (const NvLinkInfo& l : g.nvlinks) {
    links.push_back(ojson{{"link", l.link},
                          {"active", l.active},
                          {"version", opt(l.version)},
                          {"remote_pci_bus_id", opt(l.remote_pci_bus_id)}});
  }
  return ojson{{"index", g.index},
               {"name", g.name},
               {"uuid", g.uuid},
               {"pci_bus_id", g.pci_bus_id},
               {"pci_device_id", opt(g.pci_device_id)},
               {"compute_capability", g.compute_capability},
               {"sm_count", g.sm_count},
               {"memory_total_bytes", g.memory_total_bytes},
               {"l2_bytes", g.l2_bytes},
               {"memory_bus_width_bits", opt(g.memory_bus_width_bits)},
               {"sm_clock_mhz", opt(g.sm_clock_mhz)},
               {"sm_clock_max_mhz", opt(g.sm_clock_max_mhz)},
               {"mem_clock_mhz", opt(g.mem_clock_mhz)},
               {"mem_clock_max_mhz", opt(g.mem_clock_max_mhz)},
               {"power_limit_w", opt(g.power_limit_w)},
               {"power_default_limit_w", opt(g.power_default_limit_w)},
               {"pcie_gen_current", opt(g.pcie_gen_current)},
               {"pcie_gen_max", opt(g.pcie_gen_max)},
               {"pcie_width_current", opt(g.pcie_width_current)},
               {"pcie_width_max", opt(g.pcie_width_max)},
               {"ecc_enabled", opt(g.ecc_enabled)},
               {"mig_enabled", opt(g.mig_enabled)},
               {"vbios_version", opt(g.vbios_version)},
               {"nvlinks", std::move(links)}};
}

ojson to_json(const SystemInfo& s) {
  ojson gpus = ojson::array();
  for (const GpuInfo& g : s.gpus)
    gpus.push_back(to_json(g));
  return ojson{{"os", s.os},
               {"cpu",
                {{"model", s.cpu.model},
                 {"logical_cores", opt(s.cpu.logical_cores)},
                 {"memory_bytes", opt(s.cpu.memory_bytes)}}},
               {"driver_version", opt(s.driver_version)},
               {"cuda_driver_version", opt(s.cuda_driver_version)},
               {"cuda_runtime_version", opt(s.cuda_runtime_version)},
               {"cublas_version", opt(s.cublas_version)},
               {"cudnn_version", opt(s.cudnn_version)},
               {"nccl_version", opt(s.nccl_version)},
               {"gpus", std::move(gpus)}};
}

ojson to_json(const Result& r) {
  ojson params = ojson::object();
  for (const auto& [key, value] : r.parameters)
    params[key] = param_json(value);
  ojson timing = nullptr;
  if (r.timing) {
    const Timing& t = *r.timing;
    timing = ojson{{"iterations_per_sample", t.iterations_per_sample},
                   {"warmup_batches", t.warmup_batches},
                   {"cold", t.cold},
                   {"stopped_by", t.stopped_by},
                   {"seconds_total", t.seconds_total}};
  }
  ojson peak = nullptr;
  if (r.peak) {
    peak = ojson{{"value", r.peak->value},
                 {"unit", r.peak->unit},
                 {"kind", r.peak->kind},
                 {"source", r.peak->source}};
  }
  ojson clocks = nullptr;
  if (r.clocks) {
    const ClockRecord& c = *r.clocks;
    clocks = ojson{
        {"sm_mhz_min", opt(c.sm_mhz_min)},        {"sm_mhz_median", opt(c.sm_mhz_median)},
        {"sm_mhz_max", opt(c.sm_mhz_max)},        {"mem_mhz_median", opt(c.mem_mhz_median)},
        {"power_w_max", opt(c.power_w_max)},      {"temperature_c_max", opt(c.temperature_c_max)},
        {"throttle_reasons", c.throttle_reasons}, {"samples", c.samples}};
  }
  const Stats& s = r.stats;
  return ojson{
      {"id", r.id},
      {"name", r.name},
      {"devices", r.devices},
      {"parameters", std::move(params)},
      {"value", r.value},
      {"unit", r.unit},
      {"bytes_per_iteration", opt(r.bytes_per_iteration)},
      {"flops_per_iteration", opt(r.flops_per_iteration)},
      {"stats",
       {{"median", s.median},
        {"min", s.min},
        {"max", s.max},
        {"mean", s.mean},
        {"stddev", s.stddev},
        {"noise", s.noise},
        {"samples", s.samples},
        {"p99", opt(s.p99)}}},
      {"samples", r.samples},
      {"timing", std::move(timing)},
      {"peak", std::move(peak)},
      {"efficiency", opt(r.efficiency)},
      {"peak_at_clock", opt(r.peak_at_clock)},
      {"efficiency_at_clock", opt(r.efficiency_at_clock)},
      {"status", to_string(r.status)},
      {"status_reason", r.status_reason},
      {"validation", r.validation},
      {"clocks", std::move(clocks)},
      {"utilization", r.utilization ? utilization_to_json(*r.utilization) : ojson(nullptr)}};
}

ojson to_json(const CommInfo& c) {
  ojson ranks = ojson::array();
  for (const RankInfo& r : c.ranks) {
    ranks.push_back(ojson{{"rank", r.rank},
                          {"host", r.host},
                          {"pid", r.pid},
                          {"local_rank", r.local_rank},
                          {"device", r.device},
                          {"gpu_name", r.gpu_name},
                          {"gpu_uuid", r.gpu_uuid},
                          {"pci_bus_id", r.pci_bus_id}});
  }
  ojson env = ojson::object();  // std::map: written sorted by key
  for (const auto& [key, value] : c.nccl_env)
    env[key] = value;
  return ojson{{"launch", c.launch},
               {"world_size", c.world_size},
               {"ranks", std::move(ranks)},
               {"nccl_env", std::move(env)},
               {"timeout_s", c.timeout_s}};
}

}  // namespace

ojson run_to_json(const RunFile& run) {
  const Meta& m = run.meta;
  ojson results = ojson::array();
  for (const Result& r : run.results)
    results.push_back(to_json(r));
  ojson errors = ojson::array();
  for (const RunError& e : run.errors) {
    errors.push_back(ojson{{"context", e.context}, {"message", e.message}});
  }
  return ojson{{"schema", run.schema},
               {"meta",
                {{"tool_version", m.tool_version},
                 {"git_sha", m.git_sha},
                 {"argv", m.argv},
                 {"command", m.command},
                 {"started_at", m.started_at},
                 {"finished_at", m.finished_at},
                 {"host", m.host}}},
               {"system", to_json(run.system)},
               {"results", std::move(results)},
               {"errors", std::move(errors)},
               {"comm", run.comm ? to_json(*run.comm) : ojson(nullptr)},
               {"timeline", run.timeline ? timeline_to_json(*run.timeline) : ojson(nullptr)}};
}

// ---------------------------------------------------------------- reading

namespace {

// A figure must be a possible value of its unit (units.h): the report shows it, the
// advisor plans with it.
void require_possible(const Obj& o, const char* key, double value, const std::string& unit) {
  const std::string problem = quantity_problem(value, unit);
  if (!problem.empty()) o.fail_at(key, problem);
}

Meta read_meta(const Obj& o) {
  Meta m;
  m.tool_version = o.req<std::string>("tool_version");
  m.git_sha = o.req<std::string>("git_sha");
  m.argv = o.vec<std::string>("argv");
  m.command = o.req<std::string>("command");
  m.started_at = o.req<std::string>("started_at");
  m.finished_at = o.req<std::string>("finished_at");
  m.host = o.req<std::string>("host");
  return m;
}

NvLinkInfo read_nvlink(const Obj& o) {
  NvLinkInfo l;
  l.link = o.req<int>("link");
  l.active = o.req<bool>("active");
  l.version = o.opt<int>("version");
  l.remote_pci_bus_id = o.opt<std::string>("remote_pci_bus_id");
  return l;
}

GpuInfo read_gpu(const Obj& o, std::size_t position) {
  GpuInfo g;
  g.index = o.req<int>("index");
  // Results name GPUs by index (devices, utilization, timeline): an index that is
  // not the entry's position would put one GPU's results under another's name.
  if (g.index < 0 || std::size_t(g.index) != position) {
    o.fail_at("index", fmt::format("must equal its position in system.gpus ({}), got {}", position,
                                   g.index));
  }
  g.name = o.req<std::string>("name");
  g.uuid = o.req<std::string>("uuid");
  g.pci_bus_id = o.req<std::string>("pci_bus_id");
  g.pci_device_id = o.opt<uint32_t>("pci_device_id");
  g.compute_capability = o.req<std::string>("compute_capability");
  g.sm_count = o.req<int>("sm_count");
  require_at_least(o, "sm_count", g.sm_count, 0);
  g.memory_total_bytes = o.req<int64_t>("memory_total_bytes");
  require_at_least(o, "memory_total_bytes", g.memory_total_bytes, int64_t{0});
  g.l2_bytes = o.req<int64_t>("l2_bytes");
  g.memory_bus_width_bits = o.opt<int>("memory_bus_width_bits");
  g.sm_clock_mhz = o.opt<int>("sm_clock_mhz");
  g.sm_clock_max_mhz = o.opt<int>("sm_clock_max_mhz");
  g.mem_clock_mhz = o.opt<int>("mem_clock_mhz");
  g.mem_clock_max_mhz = o.opt<int>("mem_clock_max_mhz");
  for (const char* clock :
       {"sm_clock_mhz", "sm_clock_max_mhz", "mem_clock_mhz", "mem_clock_max_mhz"})
    if (const auto mhz = o.opt<int>(clock)) require_at_least(o, clock, *mhz, 0);
  g.power_limit_w = o.opt<double>("power_limit_w");
  g.power_default_limit_w = o.opt<double>("power_default_limit_w");
  for (const char* power : {"power_limit_w", "power_default_limit_w"})
    if (const auto w = o.opt<double>(power)) require_possible(o, power, *w, "W");
  g.pcie_gen_current = o.opt<int>("pcie_gen_current");
  g.pcie_gen_max = o.opt<int>("pcie_gen_max");
  g.pcie_width_current = o.opt<int>("pcie_width_current");
  g.pcie_width_max = o.opt<int>("pcie_width_max");
  g.ecc_enabled = o.opt<bool>("ecc_enabled");
  g.mig_enabled = o.opt<bool>("mig_enabled");
  g.vbios_version = o.opt<std::string>("vbios_version");
  g.nvlinks = o.objects<NvLinkInfo>("nvlinks", read_nvlink);
  return g;
}

SystemInfo read_system(const Obj& o) {
  SystemInfo s;
  s.os = o.req<std::string>("os");
  const Obj cpu = o.obj("cpu");
  s.cpu.model = cpu.req<std::string>("model");
  s.cpu.logical_cores = cpu.opt<int>("logical_cores");
  s.cpu.memory_bytes = cpu.opt<int64_t>("memory_bytes");
  s.driver_version = o.opt<std::string>("driver_version");
  s.cuda_driver_version = o.opt<std::string>("cuda_driver_version");
  s.cuda_runtime_version = o.opt<std::string>("cuda_runtime_version");
  s.cublas_version = o.opt<std::string>("cublas_version");
  s.cudnn_version = o.opt<std::string>("cudnn_version");
  s.nccl_version = o.opt<std::string>("nccl_version");
  std::size_t position = 0;
  s.gpus = o.objects<GpuInfo>("gpus", [&](const Obj& g) { return read_gpu(g, position++); });
  return s;
}

Stats read_stats(const Obj& o) {
  Stats s;
  s.median = o.req<double>("median");
  s.min = o.req<double>("min");
  s.max = o.req<double>("max");
  s.mean = o.req<double>("mean");
  s.stddev = o.req<double>("stddev");
  require_at_least(o, "stddev", s.stddev, 0.0);
  s.noise = o.req<double>("noise");
  require_at_least(o, "noise", s.noise, 0.0);
  s.samples = o.req<int>("samples");
  require_at_least(o, "samples", s.samples, 0);
  if (s.samples > 0 && !(s.min <= s.median && s.median <= s.max)) {
    o.fail_here(fmt::format("min <= median <= max does not hold (min {}, median {}, max {})", s.min,
                            s.median, s.max));
  }
  // Missing in files written before p99 existed: those stay valid.
  s.p99 = o.opt<double>("p99");
  if (s.p99 && s.samples > 0 && !(s.min <= *s.p99 && *s.p99 <= s.max)) {
    o.fail_at("p99", fmt::format("min <= p99 <= max does not hold (min {}, p99 {}, max {})", s.min,
                                 *s.p99, s.max));
  }
  return s;
}

Timing read_timing(const Obj& o) {
  Timing t;
  t.iterations_per_sample = o.req<int64_t>("iterations_per_sample");
  require_at_least(o, "iterations_per_sample", t.iterations_per_sample, int64_t{1});
  t.warmup_batches = o.req<int>("warmup_batches");
  t.cold = o.req<bool>("cold");
  t.stopped_by = o.req<std::string>("stopped_by");
  t.seconds_total = o.req<double>("seconds_total");
  return t;
}

Peak read_peak(const Obj& o) {
  Peak p;
  p.value = o.req<double>("value");
  p.unit = o.req<std::string>("unit");
  p.kind = o.req<std::string>("kind");
  p.source = o.req<std::string>("source");
  return p;
}

ClockRecord read_clocks(const Obj& o) {
  ClockRecord c;
  c.sm_mhz_min = o.opt<int>("sm_mhz_min");
  c.sm_mhz_median = o.opt<int>("sm_mhz_median");
  c.sm_mhz_max = o.opt<int>("sm_mhz_max");
  c.mem_mhz_median = o.opt<int>("mem_mhz_median");
  c.power_w_max = o.opt<double>("power_w_max");
  c.temperature_c_max = o.opt<int>("temperature_c_max");
  c.throttle_reasons = o.vec<std::string>("throttle_reasons");
  c.samples = o.req<int>("samples");
  require_at_least(o, "samples", c.samples, 0);
  return c;
}

std::map<std::string, ParamValue> read_parameters(const Obj& o) {
  std::map<std::string, ParamValue> out;
  for (const auto& [key, value] : o.json_value().items()) {
    ParamValue p;
    const std::string problem = convert(value, p);
    if (!problem.empty()) o.fail_at(key, problem);
    out.emplace(key, std::move(p));
  }
  return out;
}

void require_possible_figures(const Obj& o, const Result& r) {
  require_possible(o, "value", r.value, r.unit);
  if (r.stats.samples > 0) {
    const Obj stats = o.obj("stats");
    require_possible(stats, "median", r.stats.median, r.unit);
    require_possible(stats, "min", r.stats.min, r.unit);
    require_possible(stats, "max", r.stats.max, r.unit);
    require_possible(stats, "mean", r.stats.mean, r.unit);
    if (r.stats.p99) require_possible(stats, "p99", *r.stats.p99, r.unit);
  }
  for (std::size_t i = 0; i < r.samples.size(); ++i) {
    const std::string problem = quantity_problem(r.samples[i], r.unit);
    if (!problem.empty())
      fail(o.name(), o.path("samples") + "[" + std::to_string(i) + "]", problem);
  }
  if (r.peak) require_possible(o.obj("peak"), "value", r.peak->value, r.peak->unit);
}

Result read_result(const Obj& o, std::size_t gpu_count) {
  Result r;
  r.id = o.req<std::string>("id");
  if (r.id.empty()) o.fail_at("id", "must not be empty");
  r.name = o.req<std::string>("name");
  r.devices = o.vec<int>("devices");
  for (std::size_t i = 0; i < r.devices.size(); ++i) {
    if (r.devices[i] < 0 || std::size_t(r.devices[i]) >= gpu_count) {
      fail(o.name(), o.path("devices") + "[" + std::to_string(i) + "]",
           fmt::format("GPU index {} is out of range (system.gpus has {} entries)", r.devices[i],
                       gpu_count));
    }
  }
  r.parameters = read_parameters(o.obj("parameters"));
  r.value = o.req<double>("value");
  r.unit = o.req<std::string>("unit");
  r.bytes_per_iteration = o.opt<double>("bytes_per_iteration");
  r.flops_per_iteration = o.opt<double>("flops_per_iteration");
  r.stats = read_stats(o.obj("stats"));
  r.samples = o.vec<double>("samples");
  if (auto t = o.opt_obj("timing")) r.timing = read_timing(*t);
  if (auto p = o.opt_obj("peak")) r.peak = read_peak(*p);
  r.efficiency = o.opt<double>("efficiency");
  if (r.efficiency) require_at_least(o, "efficiency", *r.efficiency, 0.0);
  r.peak_at_clock = o.opt<double>("peak_at_clock");
  if (r.peak_at_clock) require_at_least(o, "peak_at_clock", *r.peak_at_clock, 0.0);
  r.efficiency_at_clock = o.opt<double>("efficiency_at_clock");
  if (r.efficiency_at_clock)
    require_at_least(o, "efficiency_at_clock", *r.efficiency_at_clock, 0.0);
  const auto status_text = o.req<std::string>("status");
  const std::optional<Status> status = status_from_string(status_text);
  if (!status) {
    o.fail_at("status", "unknown status " + quote(status_text) +
                            " (expected ok, invalid, unsupported or error)");
  }
  r.status = *status;
  if (r.status == Status::kOk && r.unit.empty()) {
    o.fail_at("unit", "must not be empty when status is ok");
  }
  if (r.status == Status::kOk) require_possible_figures(o, r);
  r.status_reason = o.req<std::string>("status_reason");
  r.validation = o.req<std::string>("validation");
  if (auto c = o.opt_obj("clocks")) r.clocks = read_clocks(*c);
  // Missing in files written before the monitor recorded runs: those stay valid.
  if (auto u = o.opt_obj("utilization")) r.utilization = read_utilization(*u, gpu_count);
  return r;
}

// The ways a communicator can be formed (docs/results.md, comm.launch).
constexpr std::string_view kLaunchKinds[] = {"single-process", "mpi", "nccl-comm-id", "file"};

RankInfo read_rank(const Obj& o, std::size_t index) {
  RankInfo r;
  r.rank = o.req<int>("rank");
  if (r.rank < 0 || std::size_t(r.rank) != index) {
    o.fail_at("rank",
              fmt::format("must equal its index in comm.ranks ({}), got {}", index, r.rank));
  }
  r.host = o.req<std::string>("host");
  if (r.host.empty()) o.fail_at("host", "must not be empty");
  r.pid = o.req<int>("pid");
  require_at_least(o, "pid", r.pid, 0);
  r.local_rank = o.req<int>("local_rank");
  require_at_least(o, "local_rank", r.local_rank, 0);
  r.device = o.req<int>("device");
  require_at_least(o, "device", r.device, 0);
  r.gpu_name = o.req<std::string>("gpu_name");
  r.gpu_uuid = o.req<std::string>("gpu_uuid");
  r.pci_bus_id = o.req<std::string>("pci_bus_id");
  return r;
}

std::map<std::string, std::string> read_nccl_env(const Obj& o) {
  std::map<std::string, std::string> out;
  for (const auto& [key, value] : o.json_value().items()) {
    if (key.rfind("NCCL_", 0) != 0) o.fail_at(key, "not an NCCL variable (must start with NCCL_)");
    std::string v;
    const std::string problem = convert(value, v);
    if (!problem.empty()) o.fail_at(key, problem);
    out.emplace(key, std::move(v));
  }
  return out;
}

CommInfo read_comm(const Obj& o) {
  CommInfo c;
  c.launch = o.req<std::string>("launch");
  if (std::find(std::begin(kLaunchKinds), std::end(kLaunchKinds), c.launch) ==
      std::end(kLaunchKinds)) {
    o.fail_at("launch", "unknown launch " + quote(c.launch) +
                            " (expected single-process, mpi, nccl-comm-id or file)");
  }
  c.world_size = o.req<int>("world_size");
  require_at_least(o, "world_size", c.world_size, 1);
  // The count first: a missing rank is named as such, not as the next one's index.
  const std::size_t count = o.array_size("ranks");
  if (count != std::size_t(c.world_size)) {
    o.fail_at("ranks", fmt::format("has {} entries, world_size is {}", count, c.world_size));
  }
  std::size_t index = 0;
  c.ranks = o.objects<RankInfo>("ranks", [&](const Obj& r) { return read_rank(r, index++); });
  c.nccl_env = read_nccl_env(o.obj("nccl_env"));
  c.timeout_s = o.req<double>("timeout_s");
  require_greater(o, "timeout_s", c.timeout_s, 0.0);
  return c;
}

RunError read_error(const Obj& o) {
  return RunError{o.req<std::string>("context"), o.req<std::string>("message")};
}

}  // namespace

RunFile run_from_json(const json& doc, std::string_view name) {
  const Obj top(doc, "", name);
  RunFile run;
  run.schema = top.req<std::string>("schema");
  run.meta = read_meta(top.obj("meta"));
  run.system = read_system(top.obj("system"));
  const std::size_t gpu_count = run.system.gpus.size();
  run.results =
      top.objects<Result>("results", [&](const Obj& o) { return read_result(o, gpu_count); });
  run.errors = top.objects<RunError>("errors", read_error);
  if (auto c = top.opt_obj("comm")) run.comm = read_comm(*c);
  if (auto t = top.opt_obj("timeline")) run.timeline = read_timeline(*t, gpu_count);
  return run;
}

}  // namespace gpuvs::run_json
