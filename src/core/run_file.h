// The run file, schema `gpuvs.run/1` (docs/results.md is the reference).
//
// Every figure gpuvs measures passes through these structs: benchmarks fill them,
// the report and the advisor read them back from disk, never from live objects.
// Invariants:
//  - values are in base SI units (B/s, FLOP/s, s, B, 1/s ...); the report scales them;
//  - a field the probe could not read is std::nullopt and is written as JSON null,
//    never as 0 or "";
//  - a result whose status is not kOk carries no trustworthy value: the report never
//    shows it as a number;
//  - every struct compares with == field by field (a run read back from its own
//    text compares equal to the run that was written).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace gpuvs {

inline constexpr std::string_view kRunSchema = "gpuvs.run/1";
inline constexpr std::string_view kRunSchemaFamily = "gpuvs.run/";
inline constexpr int kRunSchemaVersion = 1;

struct Meta {
  std::string tool_version;       // "0.1.0"
  std::string git_sha;            // "unknown" outside a git checkout
  std::vector<std::string> argv;  // the command line as given
  std::string command;            // "run", "bench", ...
  std::string started_at;         // ISO 8601 UTC, "2026-11-30T10:48:43Z"
  std::string finished_at;        // same format; empty while running
  std::string host;               // hostname

  bool operator==(const Meta&) const = default;
};

struct CpuInfo {
  std::string model;                    // /proc/cpuinfo "model name"
  std::optional<int> logical_cores;     // std::thread::hardware_concurrency
  std::optional<int64_t> memory_bytes;  // MemTotal

  bool operator==(const CpuInfo&) const = default;
};

struct NvLinkInfo {
  int link = 0;
  bool active = false;
  std::optional<int> version;  // NVLink generation (4 on Hopper)
  std::optional<std::string> remote_pci_bus_id;

  bool operator==(const NvLinkInfo&) const = default;
};

// One GPU as the probe saw it. Identity fields come from the CUDA runtime; the
// rest from NVML where it could be loaded (nullopt otherwise).
struct GpuInfo {
  int index = 0;                          // CUDA device ordinal in this process
  std::string name;                       // "NVIDIA H200"
  std::string uuid;                       // "GPU-xxxxxxxx-..."
  std::string pci_bus_id;                 // "00000000:19:00.0"
  std::optional<uint32_t> pci_device_id;  // (device << 16) | vendor, as NVML reports
  std::string compute_capability;         // "9.0"
  int sm_count = 0;
  int64_t memory_total_bytes = 0;
  int64_t l2_bytes = 0;
  std::optional<int> memory_bus_width_bits;
  std::optional<int> sm_clock_mhz;  // current
  std::optional<int> sm_clock_max_mhz;
  std::optional<int> mem_clock_mhz;  // current
  std::optional<int> mem_clock_max_mhz;
  std::optional<double> power_limit_w;  // enforced
  std::optional<double> power_default_limit_w;
  std::optional<int> pcie_gen_current;
  std::optional<int> pcie_gen_max;
  std::optional<int> pcie_width_current;
  std::optional<int> pcie_width_max;
  std::optional<bool> ecc_enabled;
  std::optional<bool> mig_enabled;
  std::optional<std::string> vbios_version;
  std::vector<NvLinkInfo> nvlinks;  // empty when none or unknown

  bool operator==(const GpuInfo&) const = default;
};

struct SystemInfo {
  std::string os;  // "Linux 6.1.0 x86_64"
  CpuInfo cpu;
  std::optional<std::string> driver_version;       // "580.159.04" (NVML)
  std::optional<std::string> cuda_driver_version;  // "13.0" (cudaDriverGetVersion)
  std::optional<std::string> cuda_runtime_version;
  std::optional<std::string> cublas_version;
  std::optional<std::string> cudnn_version;
  std::optional<std::string> nccl_version;
  std::vector<GpuInfo> gpus;

  bool operator==(const SystemInfo&) const = default;
};

// Summary statistics over the samples of one result, in the result's unit.
struct Stats {
  double median = 0;
  double min = 0;
  double max = 0;
  double mean = 0;
  double stddev = 0;
  double noise = 0;  // stddev / median, dimensionless
  int samples = 0;
  // 99th percentile (nearest rank) of the samples; the tail of a latency. Equals max
  // below 100 samples. nullopt in files written before it existed.
  std::optional<double> p99;

  bool operator==(const Stats&) const = default;
};

// Where a peak figure comes from: "datasheet" (catalogue entry), "measured"
// (another result), "published" (an article or benchmark), "derived" (computed
// from device properties; the formula goes in `source`).
struct Peak {
  double value = 0;
  std::string unit;
  std::string kind;    // datasheet | measured | published | derived
  std::string source;  // URL or description

  bool operator==(const Peak&) const = default;
};

// What the GPU's clocks did while the result was measured (NVML sampling).
struct ClockRecord {
  std::optional<int> sm_mhz_min;
  std::optional<int> sm_mhz_median;
  std::optional<int> sm_mhz_max;
  std::optional<int> mem_mhz_median;
  std::optional<double> power_w_max;
  std::optional<int> temperature_c_max;
  std::vector<std::string> throttle_reasons;  // union seen: "sw_power_cap", "hw_slowdown", ...
  int samples = 0;

  bool operator==(const ClockRecord&) const = default;
};

// How the harness got the samples.
struct Timing {
  int64_t iterations_per_sample = 1;
  int warmup_batches = 0;
  bool cold = false;         // L2 flushed before each sample
  std::string stopped_by;    // "noise" | "time_cap" | "max_samples"
  double seconds_total = 0;  // wall time spent measuring

  bool operator==(const Timing&) const = default;
};

// A mean and a 95th percentile (nearest rank) over the samples of a window.
struct UtilDistribution {
  double mean = 0;
  double p95 = 0;

  bool operator==(const UtilDistribution&) const = default;
};

// What one GPU did during a window: the monitor's summary (monitor/summary.h) of the
// samples whose interval overlaps it (docs/monitor.md). A figure the GPU or the
// driver does not give (GPM before Hopper) is nullopt, never 0.
struct GpuUtilization {
  int gpu = 0;  // index into system.gpus
  int samples = 0;
  double duration_s = 0;                             // last sample time - first sample time
  std::optional<UtilDistribution> sm_util_pct;       // GPM: SMs with a warp resident
  std::optional<UtilDistribution> tensor_util_pct;   // GPM: any tensor pipe active
  std::optional<UtilDistribution> dram_bw_util_pct;  // GPM: DRAM bandwidth / peak
  std::optional<UtilDistribution> gpu_util_pct;      // NVML: some kernel ran
  std::optional<double> power_w_mean;
  std::optional<double> power_w_max;
  std::optional<double> energy_j;
  double throttled_s = 0;  // seconds with a clock-event reason other than gpu_idle
  std::map<std::string, double> throttle_s_by_reason;  // every reason, gpu_idle too

  bool operator==(const GpuUtilization&) const = default;
};

// The utilization of the GPUs of a result over its window, in the time base of the
// run's timeline (RunFile::timeline, seconds since the monitor started). The window
// is the benchmark step that produced the result: the results of one step share it.
struct Utilization {
  std::string step;  // the benchmark's name, "memory.hbm"
  double t_begin_s = 0;
  double t_end_s = 0;  // >= t_begin_s
  std::vector<GpuUtilization> gpus;

  bool operator==(const Utilization&) const = default;
};

enum class Status { kOk, kInvalid, kUnsupported, kError };

std::string_view to_string(Status s);
std::optional<Status> status_from_string(std::string_view s);

using ParamValue = std::variant<bool, int64_t, double, std::string>;

struct Result {
  std::string id;            // "memory.hbm.copy" (dotted, stable across versions)
  std::string name;          // human label, "HBM copy"
  std::vector<int> devices;  // indices into system.gpus
  std::map<std::string, ParamValue> parameters;
  double value = 0;  // the headline figure (median of samples), base SI unit
  std::string unit;  // "B/s", "FLOP/s", "s", ...
  std::optional<double> bytes_per_iteration;  // what one iteration moves
  std::optional<double> flops_per_iteration;  // what one iteration computes
  Stats stats;
  std::vector<double> samples;  // per-sample values in `unit` (may be empty)
  std::optional<Timing> timing;
  std::optional<Peak> peak;
  std::optional<double> efficiency;  // value / peak.value, fraction
  // The peak at the clock the GPU ran while measured (SMs x per-SM rate x median SM
  // MHz), in `unit`; and value / peak_at_clock, a fraction. Separates throttling
  // (a low clock) from code that does not reach the hardware's rate.
  std::optional<double> peak_at_clock;
  std::optional<double> efficiency_at_clock;
  Status status = Status::kOk;
  std::string status_reason;  // why not ok; empty when ok
  std::string validation;     // what was checked and what it found
  std::optional<ClockRecord> clocks;
  // The GPUs' utilization while the step that produced this result ran; nullopt
  // when the run was not monitored (--monitor-interval 0, no NVML, older files).
  std::optional<Utilization> utilization;

  bool operator==(const Result&) const = default;
};

// One rank of a collective run: which process on which host drove which GPU.
struct RankInfo {
  int rank = 0;
  std::string host;
  int pid = 0;
  int local_rank = 0;  // index among the ranks on the same host
  int device = 0;      // CUDA ordinal in that process
  std::string gpu_name;
  std::string gpu_uuid;
  std::string pci_bus_id;

  bool operator==(const RankInfo&) const = default;
};

// How the NCCL communicator of a collectives run was formed (docs/collectives.md).
struct CommInfo {
  std::string launch;  // "single-process" | "mpi" | "nccl-comm-id" | "file"
  int world_size = 0;
  std::vector<RankInfo> ranks;  // world_size entries, by rank
  // NCCL_* variables of the environment at start (the user's settings, respected).
  std::map<std::string, std::string> nccl_env;
  double timeout_s = 0;  // a collective not done in this time aborts the communicator

  bool operator==(const CommInfo&) const = default;
};

// A numeric parameter of a result: an integer one as int64 (a double is truncated),
// or as a double; nullopt when absent or not a number.
std::optional<int64_t> int_parameter(const Result& r, const std::string& key);
std::optional<double> number_parameter(const Result& r, const std::string& key);

// A parameter as people read it: "true"/"false", the number, the string.
std::string param_text(const ParamValue& v);

struct RunError {
  std::string context;  // "bench memory.hbm.copy on GPU 0"
  std::string message;

  bool operator==(const RunError&) const = default;
};

// One GPU's samples as columns (docs/monitor.md): entry i of every column belongs to
// t_s[i]; nullopt where the sample had no such figure. t_s is non-decreasing.
struct GpuTimeline {
  int gpu = 0;              // index into system.gpus
  std::vector<double> t_s;  // seconds since the monitor started
  std::vector<std::optional<double>> sm_util_pct;
  std::vector<std::optional<double>> tensor_util_pct;
  std::vector<std::optional<double>> dram_bw_util_pct;
  std::vector<std::optional<double>> gpu_util_pct;
  std::vector<std::optional<double>> power_w;
  std::vector<std::optional<int>> sm_mhz;

  bool operator==(const GpuTimeline&) const = default;
};

// What the monitor recorded over the whole run: utilization, power and clocks of the
// measured GPUs (docs/monitor.md).
struct Timeline {
  // "nvml+gpm" (NVML and GPM on every sampled GPU), "nvml" (NVML only on some or all:
  // no SM, tensor or DRAM activity there) or "none" (nothing sampled; notes say why).
  std::string source;
  double interval_s = 0;           // asked interval between samples, > 0
  std::vector<std::string> notes;  // said once each: "GPM not supported on GPU 1 ..."
  std::vector<GpuTimeline> gpus;   // one per sampled GPU, by gpu

  bool operator==(const Timeline&) const = default;
};

struct RunFile {
  std::string schema = std::string(kRunSchema);
  Meta meta;
  SystemInfo system;
  std::vector<Result> results;
  std::vector<RunError> errors;
  std::optional<CommInfo> comm;      // present when collectives ran
  std::optional<Timeline> timeline;  // present when the run was monitored

  bool operator==(const RunFile&) const = default;
};

// Serialise to the canonical JSON text (2-space indent, trailing newline).
std::string to_json_text(const RunFile& run);

// Parse and validate. `name` is used in messages (usually the path). Throws
// gpuvs::Error (exit code 2) with one line: "<name>: <field path>: <problem>",
// e.g. "run.json: results[3].stats.median: expected a number, got string".
RunFile parse_run_file(std::string_view text, std::string_view name);

// Read a file and parse it; errors as parse_run_file, plus unreadable files.
RunFile load_run_file(const std::filesystem::path& path);

// Check that the run reads back (a run that would not, e.g. with a NaN, is refused
// with the field named), then write it with write_file_atomically (atomic_file.h): a
// crash leaves either the old file or the new one, never half of one. Throws
// gpuvs::Error (exit code 1): "cannot write <path>: <reason>".
void save_run_file(const RunFile& run, const std::filesystem::path& path);

}  // namespace gpuvs
