// Level 1's NVLink rules (every link's state, its CRC, replay and recovery counters)
// and the comparison of the driver versions with a tuned result's.
#include <fmt/format.h>

#include <string>

#include "check/health.h"
#include "check/health_sources.h"

namespace gpuvs::check {

TestVerdict judge_nvlink_state(const GpuReadings& gpu) {
  const char* kTest = "nvlink.state";
  const char* kRule =
      "fail: a link down while others are up; warn: every link down (no "
      "bridge, or the fabric is not up)";
  if (gpu.nvlinks.empty())
    return verdict(kTest, Status::kSkip, "no NVLink on this GPU", kRule, kSourceNvLink);
  std::string down;
  unsigned int up = 0;
  for (const LinkState& l : gpu.nvlinks) {
    if (l.active)
      ++up;
    else
      down += (down.empty() ? "" : ", ") + fmt::format("{}", l.link);
  }
  const size_t n = gpu.nvlinks.size();
  if (up == 0)
    return verdict(kTest, Status::kWarn, fmt::format("none of {} NVLinks is up", n), kRule,
                   kSourceNvLink);
  if (!down.empty())
    return verdict(kTest, Status::kFail, fmt::format("{} of {} NVLinks up; down: {}", up, n, down),
                   kRule, kSourceNvLink);
  return verdict(kTest, Status::kPass, fmt::format("all {} NVLinks up", n), kRule, kSourceNvLink);
}

namespace {

struct CounterRise {
  const char* name;
  std::optional<unsigned long long> NvLinkCounters::*field;
};

constexpr CounterRise kLinkCounters[] = {
    {"replay", &NvLinkCounters::replay},
    {"recovery", &NvLinkCounters::recovery},
    {"crc_flit", &NvLinkCounters::crc_flit},
    {"crc_data", &NvLinkCounters::crc_data},
};

const NvLinkCounters* find_link(const Counters& c, unsigned int link) {
  for (const NvLinkCounters& l : c.nvlinks)
    if (l.link == link) return &l;
  return nullptr;
}

}  // namespace

TestVerdict judge_nvlink_errors(const GpuReadings& gpu) {
  const char* kTest = "nvlink.errors";
  const char* kRule =
      "warn: a link's replay, recovery or CRC counter rose during the check; "
      "pass with the totals otherwise";
  if (gpu.last.nvlinks.empty())
    return verdict(kTest, Status::kSkip, "no NVLink error counter on this GPU", kRule,
                   kSourceNvLink);
  std::string rises;
  unsigned long long totals[std::size(kLinkCounters)] = {};
  bool any = false;
  for (const NvLinkCounters& now : gpu.last.nvlinks) {
    const NvLinkCounters* before = find_link(gpu.first, now.link);
    for (size_t i = 0; i < std::size(kLinkCounters); ++i) {
      const std::optional<unsigned long long>& v = now.*kLinkCounters[i].field;
      if (!v) continue;
      any = true;
      totals[i] += *v;
      if (before == nullptr) continue;
      const std::optional<unsigned long long>& b = before->*kLinkCounters[i].field;
      if (b && *v > *b)
        rises += (rises.empty() ? "" : "; ") +
                 fmt::format("link {} {} {} -> {}", now.link, kLinkCounters[i].name, *b, *v);
    }
  }
  if (!any)
    return verdict(kTest, Status::kSkip, "NVLink error counters not reported by NVML", kRule,
                   kSourceNvLink);
  if (!rises.empty())
    return verdict(kTest, Status::kWarn, "NVLink errors during the check: " + rises, kRule,
                   kSourceNvLink);
  return verdict(kTest, Status::kPass,
                 fmt::format("totals over {} links: {} replay, {} recovery, {} CRC flit, {} CRC "
                             "data; none during the check",
                             gpu.last.nvlinks.size(), totals[0], totals[1], totals[2], totals[3]),
                 kRule, kSourceNvLink);
}

TestVerdict judge_versions(const std::optional<std::string>& driver_version,
                           const std::optional<std::string>& cuda_driver_version,
                           const CachedVersions& cached) {
  const char* kTest = "versions.tune_cache";
  const char* kRule =
      "warn: the driver or CUDA driver differs from the one the tuned settings "
      "were measured with";
  if (!cached.driver_version && !cached.cuda_driver_version)
    return verdict(kTest, Status::kPass, "no tuned result to compare with", kRule, kSourceVersions);
  std::string differs;
  auto compare = [&](const char* what, const std::optional<std::string>& now,
                     const std::optional<std::string>& then) {
    if (!then) return;
    if (now == then) return;
    differs += (differs.empty() ? "" : "; ") +
               fmt::format("{} {} now, {} when tuned", what, now.value_or("unknown"), *then);
  };
  compare("driver", driver_version, cached.driver_version);
  compare("CUDA driver", cuda_driver_version, cached.cuda_driver_version);
  if (!differs.empty())
    return verdict(kTest, Status::kWarn, differs + ": tune again", kRule, kSourceVersions);
  return verdict(kTest, Status::kPass,
                 fmt::format("driver {} as when tuned", driver_version.value_or("?")), kRule,
                 kSourceVersions);
}

}  // namespace gpuvs::check
