// The helpers that turn NVML's raw answers (clock-event bitmasks, NVLink versions, PCI
// bus ids) into gpuvs's stable names (nvml.h). Plain functions: no library needed, so
// they are tested on machines without NVML.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <iterator>

#include "gpu/nvml.h"

namespace gpuvs::nvml {

std::vector<std::string> throttle_reason_names(unsigned long long mask) {
  struct Known {
    unsigned long long bit;
    const char* name;
  };
  // Stable names: they are written into run files and compared across versions.
  static constexpr Known kKnown[] = {
      {kClocksEventGpuIdle, "gpu_idle"},
      {kClocksEventApplicationsClocksSetting, "applications_clocks_setting"},
      {kClocksEventSwPowerCap, "sw_power_cap"},
      {kClocksEventHwSlowdown, "hw_slowdown"},
      {kClocksEventSyncBoost, "sync_boost"},
      {kClocksEventSwThermalSlowdown, "sw_thermal_slowdown"},
      {kClocksEventHwThermalSlowdown, "hw_thermal_slowdown"},
      {kClocksEventHwPowerBrakeSlowdown, "hw_power_brake_slowdown"},
      {kClocksEventDisplayClockSetting, "display_clock_setting"},
  };
  std::vector<std::string> names;
  for (int i = 0; i < 64; ++i) {
    const unsigned long long bit = 1ULL << i;
    if ((mask & bit) == 0) continue;
    const auto* known = std::find_if(std::begin(kKnown), std::end(kKnown),
                                     [bit](const Known& k) { return k.bit == bit; });
    names.push_back(known != std::end(kKnown) ? std::string(known->name)
                                              : fmt::format("unknown_0x{:x}", bit));
  }
  return names;
}

std::optional<int> nvlink_generation(unsigned int version_raw) {
  switch (version_raw) {
    case kNvLinkVersion1_0:
      return 1;
    case kNvLinkVersion2_0:
    case kNvLinkVersion2_2:
      return 2;
    case kNvLinkVersion3_0:
    case kNvLinkVersion3_1:
      return 3;
    case kNvLinkVersion4_0:
      return 4;
    case kNvLinkVersion5_0:
      return 5;
    default:
      return std::nullopt;
  }
}

namespace {

// Parses 1..max_digits hex digits making up all of `text`.
std::optional<unsigned long> parse_hex(std::string_view text, size_t max_digits) {
  if (text.empty() || text.size() > max_digits) return std::nullopt;
  unsigned long v = 0;
  for (char c : text) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) return std::nullopt;
    const int digit = std::isdigit(static_cast<unsigned char>(c))
                          ? c - '0'
                          : std::tolower(static_cast<unsigned char>(c)) - 'a' + 10;
    v = v * 16 + static_cast<unsigned long>(digit);
  }
  return v;
}

}  // namespace

std::optional<std::string> normalize_pci_bus_id(std::string_view text) {
  // NVML buffers may carry trailing NULs; people may paste spaces.
  while (!text.empty() &&
         (text.back() == '\0' || std::isspace(static_cast<unsigned char>(text.back()))))
    text.remove_suffix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())))
    text.remove_prefix(1);

  // The function may be left out only in the "domain:bus:device" form (NVML's %x:%x:%x).
  const size_t dot = text.rfind('.');
  const bool has_function = dot != std::string_view::npos;
  const std::optional<unsigned long> function =
      has_function ? parse_hex(text.substr(dot + 1), 1) : std::optional<unsigned long>(0);
  if (has_function) text = text.substr(0, dot);

  std::vector<std::string_view> fields;
  for (size_t start = 0;;) {
    size_t colon = text.find(':', start);
    fields.push_back(text.substr(start, colon - start));
    if (colon == std::string_view::npos) break;
    start = colon + 1;
  }

  std::optional<unsigned long> domain = 0;
  if (fields.size() == 3) {
    domain = parse_hex(fields[0], 8);
    fields.erase(fields.begin());
  } else if (fields.size() != 2 || !has_function) {
    return std::nullopt;
  }
  const std::optional<unsigned long> bus = parse_hex(fields[0], 2);
  const std::optional<unsigned long> device = parse_hex(fields[1], 2);
  if (!domain || !bus || !device || !function || *device > 0x1f || *function > 7)
    return std::nullopt;
  return fmt::format("{:08X}:{:02X}:{:02X}.{:X}", *domain, *bus, *device, *function);
}

bool same_pci_bus_id(std::string_view a, std::string_view b) {
  std::optional<std::string> na = normalize_pci_bus_id(a);
  std::optional<std::string> nb = normalize_pci_bus_id(b);
  return na && nb && *na == *nb;
}

}  // namespace gpuvs::nvml
