// The health verdicts of `gpuvs check` (docs/check.md): plain C++ over a struct of
// readings, so that every rule is tested without a GPU. A level's reader fills
// GpuReadings (level 1: check/nvml_reader.h, from NVML alone); judge_level1 turns them
// into one TestVerdict per test, each with its status, its reason in words, the
// threshold it applies and the source of that threshold.
//
// Invariants:
//  - a reading NVML did not give (std::nullopt) never passes or fails a test: the
//    test is kSkip with the reason, and a skipped test does not change the verdict;
//  - a GPU's status is the worst of its tests (fail > warn > pass); the run's exit
//    code is 0 when every GPU passes, 1 when any fails, 4 when the worst is a warning;
//  - counters read twice (before and after the event window) judge what moved during
//    the check; the first reading judges what the GPU carries from before.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "gpu/nvml.h"

namespace gpuvs::check {

enum class Status { kPass, kWarn, kFail, kSkip };

std::string_view status_name(Status status);  // "pass", "warn", "fail", "skip"
// 0 pass, 1 warn, 2 fail (the Prometheus gauge); skip reads as pass.
int status_level(Status status);
Status worse(Status a, Status b);  // skip counts as pass

struct TestVerdict {
  std::string test;  // stable id: "ecc.uncorrected", "nvlink.state", ...
  Status status = Status::kPass;
  std::string reason;     // what was seen, in words
  std::string threshold;  // the rule applied
  std::string source;     // where the rule comes from (docs/check.md cites it)
};

// Counters that can move while the check runs: read before and after the Xid window.
struct NvLinkCounters {
  unsigned int link = 0;
  std::optional<unsigned long long> replay;
  std::optional<unsigned long long> recovery;
  std::optional<unsigned long long> crc_flit;
  std::optional<unsigned long long> crc_data;
};

struct Counters {
  std::optional<unsigned long long> ecc_corrected_volatile;
  std::optional<unsigned long long> ecc_corrected_aggregate;
  std::optional<unsigned long long> ecc_uncorrected_volatile;
  std::optional<unsigned long long> ecc_uncorrected_aggregate;
  std::optional<unsigned int> pcie_replay;
  std::vector<NvLinkCounters> nvlinks;  // one per link the GPU has, in link order
};

// NVML's own records of the row remapper (gpu/nvml.h: plain structs).
using RemapReading = nvml::RemappedRows;
using RemapHistogram = nvml::RowRemapHistogram;

struct LinkState {
  unsigned int link = 0;
  bool active = false;
};

// Everything level 1 reads of one GPU.
struct GpuReadings {
  int index = 0;  // NVML index
  std::string name;
  std::string uuid;
  std::string pci_bus_id;

  std::optional<bool> ecc_enabled;
  Counters first;  // before the event window
  Counters last;   // after it

  std::optional<unsigned int> retired_pages_sbe;  // multiple single-bit errors
  std::optional<unsigned int> retired_pages_dbe;  // a double-bit error
  std::optional<bool> retired_pages_pending;
  std::optional<RemapReading> remap;
  std::optional<RemapHistogram> remap_histogram;

  // Xid critical errors delivered during the window; `xid_watched` false (with the
  // reason) where no event set could watch this GPU.
  bool xid_watched = false;
  std::string xid_unwatched_reason;
  std::vector<unsigned long long> xids;
  double window_s = 0;

  std::optional<int> pcie_gen;
  std::optional<int> pcie_gen_max;
  std::optional<int> pcie_width;
  std::optional<int> pcie_width_max;

  std::vector<LinkState> nvlinks;  // empty: no NVLink

  std::optional<unsigned long long> clock_event_reasons;  // kClocksEvent* bits, now
  std::optional<bool> persistence_mode;
  std::optional<double> power_limit_w;  // enforced
  std::optional<double> power_default_limit_w;
  std::optional<bool> mig_enabled;
  std::optional<int> temperature_c;
  std::optional<int> temperature_slowdown_c;  // the board's own thresholds
  std::optional<int> temperature_max_operating_c;
};

struct GpuVerdict {
  Status status = Status::kPass;  // the worst of `tests`
  std::vector<TestVerdict> tests;
};

GpuVerdict judge_level1(const GpuReadings& gpu);

// The per-test rules, one function each (judge_level1 calls them in this order).
TestVerdict judge_ecc_uncorrected(const GpuReadings& gpu);
TestVerdict judge_ecc_corrected(const GpuReadings& gpu);
TestVerdict judge_retired_pages(const GpuReadings& gpu);
TestVerdict judge_row_remap(const GpuReadings& gpu);
TestVerdict judge_remap_histogram(const GpuReadings& gpu);
TestVerdict judge_xid(const GpuReadings& gpu);
TestVerdict judge_pcie_link(const GpuReadings& gpu);
TestVerdict judge_pcie_replay(const GpuReadings& gpu);
TestVerdict judge_nvlink_state(const GpuReadings& gpu);
TestVerdict judge_nvlink_errors(const GpuReadings& gpu);
TestVerdict judge_clock_events(const GpuReadings& gpu);
TestVerdict judge_persistence(const GpuReadings& gpu);
TestVerdict judge_power_limit(const GpuReadings& gpu);
TestVerdict judge_mig(const GpuReadings& gpu);
TestVerdict judge_temperature(const GpuReadings& gpu);

// Xids that name an application's fault on this GPU rather than the GPU's own (a
// graphics exception, a memory page fault, a stopped channel, a preemptive cleanup).
bool is_application_xid(unsigned long long xid);

// The driver and CUDA driver versions now against those a cached tune result was
// measured with (the tune cache's fingerprint): a different driver invalidates tuned
// settings, so it warns; no cached version passes with a note. The lead wires it to
// the tune cache (src/tune/) once that exists.
struct CachedVersions {
  std::optional<std::string> driver_version;
  std::optional<std::string> cuda_driver_version;
};
TestVerdict judge_versions(const std::optional<std::string>& driver_version,
                           const std::optional<std::string>& cuda_driver_version,
                           const CachedVersions& cached);

// 0 every GPU passes, 1 any fails, 4 only warnings (docs/check.md).
ExitCode exit_code_for(const std::vector<GpuVerdict>& gpus);

}  // namespace gpuvs::check
