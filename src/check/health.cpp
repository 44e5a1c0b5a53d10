// Level 1's rules: memory errors, retired pages and row remapping, Xid events, the
// PCIe link, clocks, persistence, power limit, MIG and temperature. NVLink and the
// version comparison are in health_links.cpp. docs/check.md has each rule's table row.
#include "check/health.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "check/health_sources.h"
#include "gpu/nvml.h"

namespace gpuvs::check {

std::string_view status_name(Status status) {
  switch (status) {
    case Status::kPass:
      return "pass";
    case Status::kWarn:
      return "warn";
    case Status::kFail:
      return "fail";
    case Status::kSkip:
      return "skip";
  }
  return "skip";
}

int status_level(Status status) {
  return status == Status::kFail ? 2 : status == Status::kWarn ? 1 : 0;
}

Status worse(Status a, Status b) {
  const Status a_counted = a == Status::kSkip ? Status::kPass : a;
  const Status b_counted = b == Status::kSkip ? Status::kPass : b;
  return status_level(a_counted) >= status_level(b_counted) ? a_counted : b_counted;
}

TestVerdict verdict(std::string test, Status status, std::string reason, std::string threshold,
                    std::string source) {
  return TestVerdict{std::move(test), status, std::move(reason), std::move(threshold),
                     std::move(source)};
}

TestVerdict skipped(std::string test, std::string what, std::string threshold, std::string source) {
  return verdict(std::move(test), Status::kSkip, what + " not reported by NVML on this GPU",
                 std::move(threshold), std::move(source));
}

TestVerdict judge_ecc_uncorrected(const GpuReadings& gpu) {
  const char* kTest = "ecc.uncorrected";
  const char* kRule =
      "fail: any uncorrected error since the driver loaded (volatile); "
      "warn: uncorrected errors in the GPU's life (aggregate) only";
  if (gpu.ecc_enabled == false)
    return verdict(kTest, Status::kWarn,
                   "ECC is disabled: memory errors are neither corrected nor counted", kRule,
                   kSourceMemoryErrors);
  const std::optional<unsigned long long> vol = gpu.last.ecc_uncorrected_volatile;
  const std::optional<unsigned long long> agg = gpu.last.ecc_uncorrected_aggregate;
  if (!vol && !agg) return skipped(kTest, "uncorrected ECC count", kRule, kSourceMemoryErrors);
  if (vol.value_or(0) > 0)
    return verdict(kTest, Status::kFail,
                   fmt::format("{} uncorrected ECC error(s) since the driver loaded", *vol), kRule,
                   kSourceMemoryErrors);
  if (agg.value_or(0) > 0)
    return verdict(kTest, Status::kWarn,
                   fmt::format("{} uncorrected ECC error(s) in the GPU's life, none since the "
                               "driver loaded: see the row remapping",
                               *agg),
                   kRule, kSourceMemoryErrors);
  return verdict(kTest, Status::kPass, "no uncorrected ECC error", kRule, kSourceMemoryErrors);
}

TestVerdict judge_ecc_corrected(const GpuReadings& gpu) {
  const char* kTest = "ecc.corrected";
  const char* kRule =
      "pass with the count: corrected errors are corrected by ECC; "
      "warn: the count rose during the check";
  const std::optional<unsigned long long> vol = gpu.last.ecc_corrected_volatile;
  const std::optional<unsigned long long> agg = gpu.last.ecc_corrected_aggregate;
  if (!vol && !agg) return skipped(kTest, "corrected ECC count", kRule, kSourceMemoryErrors);
  if (vol && gpu.first.ecc_corrected_volatile && *vol > *gpu.first.ecc_corrected_volatile)
    return verdict(kTest, Status::kWarn,
                   fmt::format("corrected ECC errors rose from {} to {} during the check",
                               *gpu.first.ecc_corrected_volatile, *vol),
                   kRule, kSourceMemoryErrors);
  if (vol.value_or(0) > 0 || agg.value_or(0) > 0)
    return verdict(
        kTest, Status::kPass,
        fmt::format("{} corrected ECC error(s) since the driver loaded, {} in the "
                    "GPU's life (corrected: no data lost)",
                    vol ? fmt::format("{}", *vol) : "?", agg ? fmt::format("{}", *agg) : "?"),
        kRule, kSourceMemoryErrors);
  return verdict(kTest, Status::kPass, "no corrected ECC error", kRule, kSourceMemoryErrors);
}

TestVerdict judge_retired_pages(const GpuReadings& gpu) {
  const char* kTest = "retired_pages";
  const char* kRule =
      "warn: a page waits for retirement (takes effect at the next driver "
      "reload or reset); pass: retired pages are set aside";
  if (!gpu.retired_pages_pending && !gpu.retired_pages_sbe && !gpu.retired_pages_dbe)
    return verdict(kTest, Status::kSkip,
                   "page retirement not reported (GPUs from Ampere on remap rows instead)", kRule,
                   kSourcePageRetirement);
  const unsigned int total = gpu.retired_pages_sbe.value_or(0) + gpu.retired_pages_dbe.value_or(0);
  if (gpu.retired_pages_pending == true)
    return verdict(kTest, Status::kWarn,
                   fmt::format("a page retirement is pending ({} retired): reload the driver or "
                               "reset the GPU",
                               total),
                   kRule, kSourcePageRetirement);
  return verdict(kTest, Status::kPass,
                 total == 0 ? std::string("no retired page")
                            : fmt::format("{} retired page(s) ({} single-bit, {} double-bit)",
                                          total, gpu.retired_pages_sbe.value_or(0),
                                          gpu.retired_pages_dbe.value_or(0)),
                 kRule, kSourcePageRetirement);
}

TestVerdict judge_row_remap(const GpuReadings& gpu) {
  const char* kTest = "row_remap";
  const char* kRule =
      "fail: a remapping failed (NVIDIA's RMA condition); warn: a remapping "
      "is pending (reset the GPU)";
  if (!gpu.remap) return skipped(kTest, "row remapping", kRule, kSourceMemoryErrors);
  const RemapReading& r = *gpu.remap;
  const std::string rows = fmt::format(
      "{} row(s) remapped for correctable, {} for uncorrectable "
      "errors",
      r.corrected, r.uncorrected);
  if (r.failure)
    return verdict(kTest, Status::kFail, "a row remapping failed (" + rows + "): replace the GPU",
                   kRule, kSourceMemoryErrors);
  if (r.pending)
    return verdict(kTest, Status::kWarn,
                   "a row remapping is pending (" + rows + "): reset the GPU to apply it", kRule,
                   kSourceMemoryErrors);
  return verdict(kTest, Status::kPass, rows, kRule, kSourceMemoryErrors);
}

TestVerdict judge_remap_histogram(const GpuReadings& gpu) {
  const char* kTest = "row_remap.histogram";
  const char* kRule =
      "warn: a memory bank has no spare row left (its next failing row "
      "cannot be remapped)";
  if (!gpu.remap_histogram)
    return skipped(kTest, "row remapper histogram", kRule, kSourceMemoryErrors);
  const RemapHistogram& h = *gpu.remap_histogram;
  const std::string banks = fmt::format(
      "banks by spare rows left: {} all, {} high, {} partial, "
      "{} low, {} none",
      h.max, h.high, h.partial, h.low, h.none);
  return verdict(kTest, h.none > 0 ? Status::kWarn : Status::kPass, banks, kRule,
                 kSourceMemoryErrors);
}

bool is_application_xid(unsigned long long xid) {
  return xid == 13 || xid == 31 || xid == 43 || xid == 45;
}

TestVerdict judge_xid(const GpuReadings& gpu) {
  const char* kTest = "xid";
  const char* kRule =
      "fail: an Xid critical error during the check; warn: only Xids of an "
      "application's fault (13, 31, 43, 45)";
  if (!gpu.xid_watched)
    return verdict(kTest, Status::kSkip, "Xid events not watched: " + gpu.xid_unwatched_reason,
                   kRule, kSourceXid);
  if (gpu.xids.empty())
    return verdict(kTest, Status::kPass, fmt::format("no Xid in {:.1f} s", gpu.window_s), kRule,
                   kSourceXid);
  std::string list;
  bool hardware = false;
  for (unsigned long long x : gpu.xids) {
    list += (list.empty() ? "" : ", ") + fmt::format("{}", x);
    hardware = hardware || !is_application_xid(x);
  }
  return verdict(kTest, hardware ? Status::kFail : Status::kWarn,
                 fmt::format("Xid {} during the {:.1f} s window", list, gpu.window_s), kRule,
                 kSourceXid);
}

namespace {

bool idle_now(const GpuReadings& gpu) {
  return gpu.clock_event_reasons && (*gpu.clock_event_reasons & nvml::kClocksEventGpuIdle) != 0;
}

}  // namespace

TestVerdict judge_pcie_link(const GpuReadings& gpu) {
  const char* kTest = "pcie.link";
  const char* kRule =
      "width below the maximum: warn at idle, fail while busy; generation below "
      "the maximum: a note at idle (power saving), warn while busy";
  if (!gpu.pcie_width || !gpu.pcie_width_max || !gpu.pcie_gen || !gpu.pcie_gen_max)
    return skipped(kTest, "PCIe link generation or width", kRule, kSourcePcie);
  const bool idle = idle_now(gpu);
  const std::string link =
      fmt::format("PCIe gen {} x{} (maximum gen {} x{}){}", *gpu.pcie_gen, *gpu.pcie_width,
                  *gpu.pcie_gen_max, *gpu.pcie_width_max, idle ? ", GPU idle" : "");
  if (*gpu.pcie_width < *gpu.pcie_width_max)
    return verdict(kTest, idle ? Status::kWarn : Status::kFail,
                   link +
                       ": the link trained narrower than its maximum (reseat or check the "
                       "slot and riser)",
                   kRule, kSourcePcie);
  if (*gpu.pcie_gen < *gpu.pcie_gen_max) {
    if (idle)
      return verdict(kTest, Status::kPass,
                     link + ": a lower generation at idle is the GPU's power saving", kRule,
                     kSourcePcie);
    return verdict(kTest, Status::kWarn, link + ": a lower generation while not idle", kRule,
                   kSourcePcie);
  }
  return verdict(kTest, Status::kPass, link, kRule, kSourcePcie);
}

TestVerdict judge_pcie_replay(const GpuReadings& gpu) {
  const char* kTest = "pcie.replay";
  const char* kRule =
      "warn: the replay counter rose during the check; pass with the count "
      "otherwise";
  if (!gpu.last.pcie_replay) return skipped(kTest, "PCIe replay counter", kRule, kSourcePcieReplay);
  const unsigned int now = *gpu.last.pcie_replay;
  if (gpu.first.pcie_replay && now > *gpu.first.pcie_replay)
    return verdict(kTest, Status::kWarn,
                   fmt::format("PCIe replays rose from {} to {} during the check (link errors)",
                               *gpu.first.pcie_replay, now),
                   kRule, kSourcePcieReplay);
  return verdict(
      kTest, Status::kPass,
      fmt::format("{} PCIe replay(s) since the driver loaded, none during the check", now), kRule,
      kSourcePcieReplay);
}

TestVerdict judge_clock_events(const GpuReadings& gpu) {
  const char* kTest = "clocks.events";
  const char* kRule =
      "fail: hardware slowdown, hardware thermal slowdown or power brake now; "
      "warn: software thermal slowdown; power capping is recorded, not a fault";
  if (!gpu.clock_event_reasons)
    return skipped(kTest, "clock-event reasons", kRule, kSourceClockEvents);
  const unsigned long long m = *gpu.clock_event_reasons;
  std::vector<std::string> names = nvml::throttle_reason_names(m);
  std::string list;
  for (const std::string& n : names)
    list += (list.empty() ? "" : ", ") + n;
  const std::string seen =
      list.empty() ? std::string("no clock-event reason") : "clock-event reasons now: " + list;
  if ((m & (nvml::kClocksEventHwSlowdown | nvml::kClocksEventHwThermalSlowdown |
            nvml::kClocksEventHwPowerBrakeSlowdown)) != 0)
    return verdict(kTest, Status::kFail, seen, kRule, kSourceClockEvents);
  if ((m & nvml::kClocksEventSwThermalSlowdown) != 0)
    return verdict(kTest, Status::kWarn, seen, kRule, kSourceClockEvents);
  return verdict(kTest, Status::kPass, seen, kRule, kSourceClockEvents);
}

TestVerdict judge_persistence(const GpuReadings& gpu) {
  const char* kTest = "persistence_mode";
  const char* kRule =
      "warn: persistence mode off (the driver unloads between jobs and each "
      "job pays the start-up)";
  if (!gpu.persistence_mode) return skipped(kTest, "persistence mode", kRule, kSourceDcgmSoftware);
  if (!*gpu.persistence_mode)
    return verdict(kTest, Status::kWarn, "persistence mode is off (nvidia-smi -pm 1)", kRule,
                   kSourceDcgmSoftware);
  return verdict(kTest, Status::kPass, "persistence mode is on", kRule, kSourceDcgmSoftware);
}

TestVerdict judge_power_limit(const GpuReadings& gpu) {
  const char* kTest = "power.limit";
  const char* kRule = "warn: the enforced power limit is below the board's default";
  if (!gpu.power_limit_w || !gpu.power_default_limit_w)
    return skipped(kTest, "power limit", kRule, kSourceNvml);
  const std::string seen = fmt::format("power limit {:.0f} W, default {:.0f} W", *gpu.power_limit_w,
                                       *gpu.power_default_limit_w);
  // Half a watt: NVML reports milliwatts, limits are set in whole watts.
  if (*gpu.power_limit_w < *gpu.power_default_limit_w - 0.5)
    return verdict(kTest, Status::kWarn, seen + ": lowered, every figure under load will be too",
                   kRule, kSourceNvml);
  return verdict(kTest, Status::kPass, seen, kRule, kSourceNvml);
}

TestVerdict judge_mig(const GpuReadings& gpu) {
  const char* kTest = "mig";
  const char* kRule = "a note: MIG on splits the GPU, whole-GPU figures do not apply";
  if (!gpu.mig_enabled)
    return verdict(kTest, Status::kSkip, "MIG mode not reported (a GPU without MIG)", kRule,
                   kSourceNvml);
  return verdict(kTest, Status::kPass, *gpu.mig_enabled ? "MIG is on" : "MIG is off", kRule,
                 kSourceNvml);
}

TestVerdict judge_temperature(const GpuReadings& gpu) {
  const char* kTest = "temperature";
  const char* kRule =
      "fail: at or above the board's slowdown threshold; warn: at or above its "
      "maximum operating temperature";
  if (!gpu.temperature_c) return skipped(kTest, "GPU temperature", kRule, kSourceNvml);
  const int t = *gpu.temperature_c;
  if (gpu.temperature_slowdown_c && t >= *gpu.temperature_slowdown_c)
    return verdict(kTest, Status::kFail,
                   fmt::format("{} °C, at or above the slowdown threshold {} °C", t,
                               *gpu.temperature_slowdown_c),
                   kRule, kSourceNvml);
  if (gpu.temperature_max_operating_c && t >= *gpu.temperature_max_operating_c)
    return verdict(kTest, Status::kWarn,
                   fmt::format("{} °C, at or above the maximum operating temperature {} °C", t,
                               *gpu.temperature_max_operating_c),
                   kRule, kSourceNvml);
  if (!gpu.temperature_slowdown_c && !gpu.temperature_max_operating_c)
    return verdict(kTest, Status::kPass, fmt::format("{} °C (no threshold reported)", t), kRule,
                   kSourceNvml);
  return verdict(
      kTest, Status::kPass,
      fmt::format("{} °C (slowdown at {})", t,
                  gpu.temperature_slowdown_c ? fmt::format("{} °C", *gpu.temperature_slowdown_c)
                                             : std::string("?")),
      kRule, kSourceNvml);
}

GpuVerdict judge_level1(const GpuReadings& gpu) {
  GpuVerdict v;
  v.tests = {judge_ecc_uncorrected(gpu), judge_ecc_corrected(gpu),
             judge_retired_pages(gpu),   judge_row_remap(gpu),
             judge_remap_histogram(gpu), judge_xid(gpu),
             judge_pcie_link(gpu),       judge_pcie_replay(gpu),
             judge_nvlink_state(gpu),    judge_nvlink_errors(gpu),
             judge_clock_events(gpu),    judge_persistence(gpu),
             judge_power_limit(gpu),     judge_mig(gpu),
             judge_temperature(gpu)};
  for (const TestVerdict& t : v.tests)
    v.status = worse(v.status, t.status);
  return v;
}

ExitCode exit_code_for(const std::vector<GpuVerdict>& gpus) {
  Status all = Status::kPass;
  for (const GpuVerdict& g : gpus)
    all = worse(all, g.status);
  if (all == Status::kFail) return ExitCode::kFailure;
  if (all == Status::kWarn) return ExitCode::kDegraded;
  return ExitCode::kOk;
}

}  // namespace gpuvs::check
