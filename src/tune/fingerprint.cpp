#include "tune/fingerprint.h"

#include <fmt/format.h>

#include <optional>

#include "core/error.h"
#include "core/text.h"

namespace gpuvs::tune {

namespace {

std::string text_of(const std::string& v) {
  return v;
}
std::string text_of(const std::optional<std::string>& v) {
  return v ? *v : "unknown";
}
std::string text_of(const std::optional<bool>& v) {
  return v ? (*v ? "on" : "off") : "unknown";
}
// The shortest text that reads back as the value: 700 W, 687.5 W.
std::string watts(const std::optional<double>& v) {
  return v ? fmt::format("{} W", *v) : "unknown";
}

template <class T>
void compare(std::vector<FieldChange>& out, const char* field, const T& cached, const T& now) {
  if (cached != now) out.push_back({field, text_of(cached), text_of(now)});
}

}  // namespace

Fingerprint fingerprint_of(const SystemInfo& system, int gpu) {
  for (const GpuInfo& g : system.gpus) {
    if (g.index != gpu) continue;
    Fingerprint f;
    f.uuid = g.uuid;
    f.name = g.name;
    f.driver_version = system.driver_version;
    f.cuda_driver_version = system.cuda_driver_version;
    f.cuda_runtime_version = system.cuda_runtime_version;
    f.cublas_version = system.cublas_version;
    f.cudnn_version = system.cudnn_version;
    f.nccl_version = system.nccl_version;
    f.power_limit_w = g.power_limit_w;
    f.mig_enabled = g.mig_enabled;
    f.ecc_enabled = g.ecc_enabled;
    return f;
  }
  throw Error(fmt::format("no GPU {} in the probed system ({} GPUs)", gpu, system.gpus.size()));
}

std::vector<FieldChange> changed_fields(const Fingerprint& cached, const Fingerprint& now) {
  std::vector<FieldChange> out;
  compare(out, "uuid", cached.uuid, now.uuid);
  compare(out, "name", cached.name, now.name);
  compare(out, "driver_version", cached.driver_version, now.driver_version);
  compare(out, "cuda_driver_version", cached.cuda_driver_version, now.cuda_driver_version);
  compare(out, "cuda_runtime_version", cached.cuda_runtime_version, now.cuda_runtime_version);
  compare(out, "cublas_version", cached.cublas_version, now.cublas_version);
  compare(out, "cudnn_version", cached.cudnn_version, now.cudnn_version);
  compare(out, "nccl_version", cached.nccl_version, now.nccl_version);
  if (cached.power_limit_w != now.power_limit_w)
    out.push_back({"power_limit_w", watts(cached.power_limit_w), watts(now.power_limit_w)});
  compare(out, "mig_enabled", cached.mig_enabled, now.mig_enabled);
  compare(out, "ecc_enabled", cached.ecc_enabled, now.ecc_enabled);
  return out;
}

std::string describe(const FieldChange& change) {
  return fmt::format("{} changed: {} → {}", change.field, one_line(change.cached),
                     one_line(change.now));
}

}  // namespace gpuvs::tune
