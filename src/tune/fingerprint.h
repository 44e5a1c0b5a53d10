// A GPU's fingerprint (tune_result.h) as the probe sees it now, and what changed
// between the fingerprint a cached result was measured under and today's: every field
// compared, each change named as the JSON field it is (docs/tune.md).
#pragma once

#include <string>
#include <vector>

#include "core/run_file.h"
#include "tune/tune_result.h"

namespace gpuvs::tune {

// The fingerprint of the GPU whose index (GpuInfo::index) is `gpu`. Throws gpuvs::Error
// when the system has no such GPU.
Fingerprint fingerprint_of(const SystemInfo& system, int gpu);

// One field that differs: its JSON name and both values as text ("unknown" for a value
// the probe could not read, "700 W" for a power limit, "on"/"off" for a mode).
struct FieldChange {
  std::string field;
  std::string cached;
  std::string now;

  bool operator==(const FieldChange&) const = default;
};

// Every field of `cached` that differs from `now`, in the order of the struct.
std::vector<FieldChange> changed_fields(const Fingerprint& cached, const Fingerprint& now);

// "driver_version changed: 580.95.05 → 580.159.04": one line, control characters of
// the values (they come from a file) escaped.
std::string describe(const FieldChange& change);

}  // namespace gpuvs::tune
