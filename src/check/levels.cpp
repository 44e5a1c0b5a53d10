#include "check/levels.h"

#include <algorithm>
#include <vector>

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

std::vector<Level>& table() {
  static std::vector<Level> levels = {
      {1, "health",
       "NVML health, seconds and no load: ECC, retired pages, row remapping, Xid events, PCIe "
       "and NVLink state and errors, clocks, persistence, power limit, MIG, temperature",
       run_level1},
  };
  return levels;
}

}  // namespace

std::span<const Level> levels() {
  return table();
}

void register_level(const Level& level) {
  std::vector<Level>& t = table();
  for (Level& l : t) {
    if (l.number == level.number) {
      l = level;
      return;
    }
  }
  t.push_back(level);
  std::sort(t.begin(), t.end(), [](const Level& a, const Level& b) { return a.number < b.number; });
}

const Level* find_level(int number) {
  for (const Level& l : table())
    if (l.number == number) return &l;
  return nullptr;
}

GpuReadings combine_readings(const GpuReadings& start, const GpuReadings* during,
                             const GpuReadings& end) {
  GpuReadings out = end;
  out.first = start.first;
  out.xids = start.xids;
  if (during) out.xids.insert(out.xids.end(), during->xids.begin(), during->xids.end());
  out.xids.insert(out.xids.end(), end.xids.begin(), end.xids.end());
  out.xid_watched = end.xid_watched && (!during || during->xid_watched);
  if (!out.xid_watched && out.xid_unwatched_reason.empty() && during)
    out.xid_unwatched_reason = during->xid_unwatched_reason;
  out.window_s = start.window_s + (during ? during->window_s : 0) + end.window_s;
  return out;
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
