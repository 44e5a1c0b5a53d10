#include "check/levels.h"

#include <array>

#include "core/host.h"

namespace gpuvs::check {

namespace {

void run_level1(const nvml::Library& library, const CheckRequest& request, CheckReport& report) {
  report.system = read_system(library);
  report.xid_window_s = request.xid_window_s;
  for (GpuReadings& r : read_level1(library, request.gpus, request.xid_window_s)) {
    GpuCheck c;
    c.verdict = judge_level1(r);
    const auto cached = request.cached_versions.find(r.uuid);
    TestVerdict versions =
        judge_versions(report.system.driver_version, report.system.cuda_driver_version,
                       cached == request.cached_versions.end() ? CachedVersions{} : cached->second);
    c.verdict.status = worse(c.verdict.status, versions.status);
    c.verdict.tests.push_back(std::move(versions));
    c.readings = std::move(r);
    report.gpus.push_back(std::move(c));
  }
}

constexpr std::array<Level, 1> kLevels = {{
    {1, "health",
     "NVML health, seconds and no load: ECC, retired pages, row remapping, Xid events, PCIe "
     "and NVLink state and errors, clocks, persistence, power limit, MIG, temperature",
     run_level1},
}};

}  // namespace

std::span<const Level> levels() {
  return kLevels;
}

const Level* find_level(int number) {
  for (const Level& l : kLevels)
    if (l.number == number) return &l;
  return nullptr;
}

void run_level(const Level& level, const nvml::Library& library, const CheckRequest& request,
               CheckReport& report) {
  const double start = monotonic_seconds();
  report.level = level.number;
  level.run(library, request, report);
  std::vector<GpuVerdict> verdicts;
  report.status = Status::kPass;
  for (const GpuCheck& g : report.gpus) {
    verdicts.push_back(g.verdict);
    report.status = worse(report.status, g.verdict.status);
  }
  report.exit_code = exit_code_for(verdicts);
  report.seconds = monotonic_seconds() - start;
}

}  // namespace gpuvs::check
