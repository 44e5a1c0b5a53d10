// The verdicts of levels 2 and 3. See level_verdicts.h; docs/check.md has the rules.
#include "check/level_verdicts.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <iterator>
#include <utility>

#include "core/units.h"

namespace gpuvs::check {

namespace {

constexpr const char* kSourceDcgmDiag =
    "NVIDIA DCGM diagnostics (dcgmi diag: memory test, targeted stress)";
constexpr const char* kSourceSustained = "NVIDIA DCGM targeted power test; docs/check.md";

// The memory test's reason names this many ranges; the rest are counted.
constexpr size_t kShownRanges = 3;

TestVerdict make_verdict(std::string test, Status status, std::string reason, std::string threshold,
                         std::string_view source) {
  return TestVerdict{std::move(test), status, std::move(reason), std::move(threshold),
                     std::string(source)};
}

std::string join(const std::vector<std::string>& lines, std::string_view separator) {
  std::string out;
  for (const std::string& l : lines) {
    if (!out.empty()) out += separator;
    out += l;
  }
  return out;
}

// Parses exactly `min_digits` to `max_digits` hex digits at `pos`, moving past them.
std::optional<uint64_t> hex_field(std::string_view s, size_t& pos, size_t min_digits,
                                  size_t max_digits) {
  uint64_t value = 0;
  size_t n = 0;
  while (pos < s.size() && n < max_digits && std::isxdigit(static_cast<unsigned char>(s[pos]))) {
    const char c = static_cast<char>(std::tolower(static_cast<unsigned char>(s[pos])));
    value = value * 16 + static_cast<uint64_t>(c <= '9' ? c - '0' : c - 'a' + 10);
    ++pos;
    ++n;
  }
  if (n < min_digits) return std::nullopt;
  return value;
}

bool expect(std::string_view s, size_t& pos, char c) {
  if (pos >= s.size() || s[pos] != c) return false;
  ++pos;
  return true;
}

// Two rates that differ but would read the same at 3 significant digits get more, so
// that a figure just below its floor never reads as equal to it.
std::pair<std::string, std::string> distinct_rates(double a, double b) {
  int digits = 3;
  std::string sa = format_si(a, "B/s", digits);
  std::string sb = format_si(b, "B/s", digits);
  while (a != b && sa == sb && digits < 9) {
    ++digits;
    sa = format_si(a, "B/s", digits);
    sb = format_si(b, "B/s", digits);
  }
  return {sa, sb};
}

std::string percent_of(size_t part, size_t whole) {
  // Rounded down to 0.1 %, so that 89.96 % reads 89.9 %, not the 90.0 % it falls short of.
  const double tenths = std::floor(1000.0 * double(part) / double(whole));
  return fmt::format("{:.1f} %", tenths / 10);
}

}  // namespace

std::optional<uint64_t> pci_bus_key(std::string_view id) {
  // domain:bus:device.function. NVML writes 8 digits of domain, CUDA 4 (printf's %04x,
  // so a domain above 0xffff takes more): 4 to 8 are accepted.
  size_t pos = 0;
  const std::optional<uint64_t> domain = hex_field(id, pos, 4, 8);
  if (!domain || !expect(id, pos, ':')) return std::nullopt;
  const std::optional<uint64_t> bus = hex_field(id, pos, 2, 2);
  if (!bus || !expect(id, pos, ':')) return std::nullopt;
  const std::optional<uint64_t> device = hex_field(id, pos, 2, 2);
  if (!device || !expect(id, pos, '.')) return std::nullopt;
  const std::optional<uint64_t> function = hex_field(id, pos, 1, 1);
  if (!function || pos != id.size()) return std::nullopt;
  // PCI gives a device 5 bits and a function 3.
  if (*device > 0x1f || *function > 7) return std::nullopt;
  return (*domain << 32) | (*bus << 16) | (*device << 8) | *function;
}

std::vector<std::optional<int>> match_cuda_devices(const std::vector<std::string>& nvml_bus_ids,
                                                   const std::vector<std::string>& cuda_bus_ids) {
  std::vector<std::optional<uint64_t>> cuda_keys;
  cuda_keys.reserve(cuda_bus_ids.size());
  for (const std::string& id : cuda_bus_ids)
    cuda_keys.push_back(pci_bus_key(id));
  std::vector<std::optional<int>> out;
  out.reserve(nvml_bus_ids.size());
  for (const std::string& id : nvml_bus_ids) {
    const std::optional<uint64_t> key = pci_bus_key(id);
    std::optional<int> ordinal;
    if (key) {
      const auto it = std::find(cuda_keys.begin(), cuda_keys.end(), key);
      if (it != cuda_keys.end()) ordinal = static_cast<int>(it - cuda_keys.begin());
    }
    out.push_back(ordinal);
  }
  return out;
}

TestVerdict judge_memtest(const MemtestSummary& m, std::string_view test, double min_fraction) {
  const std::string rule = fmt::format(
      "at least {:g} % of free memory tested with no mismatching word; fail: any "
      "mismatching word; warn: less memory tested",
      100 * min_fraction);
  const std::string covered =
      (m.rounds > 0 ? fmt::format("{} round(s), the least covering ", m.rounds) : std::string()) +
      (m.free_bytes > 0
           ? fmt::format("{} tested of {} free ({})", format_bytes_binary(int64_t(m.tested_bytes)),
                         format_bytes_binary(int64_t(m.free_bytes)),
                         percent_of(m.tested_bytes, m.free_bytes))
           : fmt::format("{} tested (free memory is not known)",
                         format_bytes_binary(int64_t(m.tested_bytes))));

  uint64_t recorded = 0;
  for (const MemErrorRange& r : m.ranges)
    recorded += r.words;
  // The count is authoritative; ranges without a count still are errors.
  const uint64_t errors = std::max(m.errors, recorded);
  if (errors > 0) {
    std::vector<std::string> shown;
    for (size_t i = 0; i < m.ranges.size() && i < kShownRanges; ++i)
      shown.push_back(describe(m.ranges[i]));
    std::string where = shown.empty() ? std::string("no address recorded") : join(shown, "; ");
    if (m.ranges.size() > kShownRanges)
      where += fmt::format("; and {} more range(s)", m.ranges.size() - kShownRanges);
    if (m.truncated || errors > recorded)
      where += fmt::format("; only the first {} word(s) recorded", recorded);
    return make_verdict(std::string(test), Status::kFail,
                        fmt::format("{} word(s) did not hold what was written, {} in {:.0f} s: {}",
                                    errors, covered, m.seconds, where),
                        rule, kSourceDcgmDiag);
  }
  if (m.free_bytes == 0)
    return make_verdict(std::string(test), Status::kWarn,
                        fmt::format("no error in {} in {:.0f} s: the share of free memory "
                                    "tested cannot be judged",
                                    covered, m.seconds),
                        rule, kSourceDcgmDiag);
  if (double(m.tested_bytes) / double(m.free_bytes) < min_fraction)
    return make_verdict(std::string(test), Status::kWarn,
                        fmt::format("no error, but {} in {:.0f} s: less than {:g} % of free memory",
                                    covered, m.seconds, 100 * min_fraction),
                        rule, kSourceDcgmDiag);
  return make_verdict(std::string(test), Status::kPass,
                      fmt::format("no error in {} in {:.0f} s", covered, m.seconds), rule,
                      kSourceDcgmDiag);
}

std::vector<TestVerdict> judge_gemm(const GemmNodeVerdict& node, bool valid,
                                    std::string_view validation) {
  const std::string& p = node.precision;
  std::vector<TestVerdict> out;

  const std::string result_rule =
      "fail: D outside the tolerance of its FP64 reference (compute.gemm's check)";
  const std::string found = validation.empty() ? std::string() : ": " + std::string(validation);
  out.push_back(make_verdict(fmt::format("gemm.{}.result", p),
                             valid ? Status::kPass : Status::kFail,
                             fmt::format("{} GEMM D {} its FP64 reference{}", p,
                                         valid ? "matches" : "does not match", found),
                             result_rule, kSourceDcgmDiag));

  out.push_back(make_verdict(
      fmt::format("gemm.{}.repeatable", p), node.repeatable ? Status::kPass : Status::kFail,
      node.repeatable
          ? fmt::format("{} GEMM gave the same bits on every run of the same operands", p)
          : fmt::format("{} GEMM gave different bits on repeated runs of the same operands", p),
      "fail: any run giving other bits than the first for the same operands", kSourceDcgmDiag));

  const std::string node_rule = fmt::format(
      "fail: bits other than those most GPUs of the model on this node gave, or a rate more "
      "than {:g} % below the node's median for the model",
      100 * kSlowFraction);
  const std::string test = fmt::format("gemm.{}.node", p);
  if (!node.matches_node || node.slow) {
    // node_compare.h's reason names the rate and the median; a verdict built without
    // it still says which rule failed.
    std::string why = node.reason;
    if (why.empty()) {
      std::vector<std::string> parts;
      if (!node.matches_node)
        parts.push_back(fmt::format("{} GEMM bits differ from the other {} GPU(s) of its model", p,
                                    std::max(0, node.peers - 1)));
      if (node.slow)
        parts.push_back(fmt::format("{} GEMM more than {:g} % below the node's median {}", p,
                                    100 * kSlowFraction, format_si(node.median_flops, "FLOP/s")));
      why = join(parts, "; ");
    }
    out.push_back(make_verdict(test, Status::kFail, why, node_rule, kSourceDcgmDiag));
  } else if (node.peers <= 1) {
    out.push_back(make_verdict(
        test, Status::kPass,
        fmt::format("the only GPU of its model on this node: no other {} GEMM to compare its "
                    "bits and rate with",
                    p),
        node_rule, kSourceDcgmDiag));
  } else {
    out.push_back(make_verdict(
        test, Status::kPass,
        fmt::format("{} GEMM bits the same as the other {} GPU(s) of its model, rate within {:g} "
                    "% of their median {}",
                    p, node.peers - 1, 100 * kSlowFraction, format_si(node.median_flops, "FLOP/s")),
        node_rule, kSourceDcgmDiag));
  }
  return out;
}

std::optional<double> pcie_bytes_per_s(int gen, int width) {
  // Per generation: transfers per lane per second, payload bits per line bit.
  struct Rate {
    double transfers, encoding;
  };
  constexpr Rate kRates[] = {{2.5e9, 8.0 / 10.0},   {5e9, 8.0 / 10.0},     {8e9, 128.0 / 130.0},
                             {16e9, 128.0 / 130.0}, {32e9, 128.0 / 130.0}, {64e9, 242.0 / 256.0}};
  if (width < 1 || gen < 1 || gen > static_cast<int>(std::size(kRates))) return std::nullopt;
  const Rate& r = kRates[gen - 1];
  return r.transfers * width * r.encoding / 8;
}

TestVerdict judge_floor(std::string_view test, std::optional<double> measured_bytes_per_s,
                        std::optional<double> floor_bytes_per_s, std::string_view floor_from,
                        std::string_view source) {
  // A NaN or negative figure is not a measurement, nor a non-positive floor a floor:
  // either would make the comparison pass or fail for no reason.
  const bool has_measured =
      measured_bytes_per_s && std::isfinite(*measured_bytes_per_s) && *measured_bytes_per_s >= 0;
  const bool has_floor =
      floor_bytes_per_s && std::isfinite(*floor_bytes_per_s) && *floor_bytes_per_s > 0;
  const std::string from =
      floor_from.empty() ? std::string() : " (" + std::string(floor_from) + ")";
  const std::string rule =
      has_floor ? fmt::format("at least {}{}: fail below, pass at or above",
                              format_si(*floor_bytes_per_s, "B/s"), from)
                : fmt::format("at least the floor{}: fail below, pass at or above", from);
  if (!has_measured || !has_floor) {
    std::vector<std::string> missing;
    if (!measured_bytes_per_s)
      missing.push_back("the bandwidth was not measured");
    else if (!has_measured)
      missing.push_back(fmt::format("the measured bandwidth {} B/s is not a possible figure",
                                    *measured_bytes_per_s));
    if (!floor_bytes_per_s)
      missing.push_back("no floor is known for this GPU" + from);
    else if (!has_floor)
      missing.push_back(
          fmt::format("the floor {} B/s is not a possible figure{}", *floor_bytes_per_s, from));
    if (has_measured)
      missing.push_back(fmt::format("{} measured", format_si(*measured_bytes_per_s, "B/s")));
    return make_verdict(std::string(test), Status::kSkip, join(missing, "; "), rule, source);
  }
  const auto [measured, floor] = distinct_rates(*measured_bytes_per_s, *floor_bytes_per_s);
  if (*measured_bytes_per_s < *floor_bytes_per_s)
    return make_verdict(std::string(test), Status::kFail,
                        fmt::format("{} measured, below the floor of {}", measured, floor), rule,
                        source);
  return make_verdict(std::string(test), Status::kPass,
                      fmt::format("{} measured, at or above the floor of {}", measured, floor),
                      rule, source);
}

std::vector<TestVerdict> judge_sustained_load(const SustainedVerdict& v, double seconds,
                                              std::optional<double> flops) {
  // The verdict does not carry the rules it was judged by: the threshold states the
  // defaults, which the level uses.
  const SustainedRules rules;
  const std::string load_rule = fmt::format(
      "after the first {:.0f} s: median power at least {:.0f} % of the enforced limit, no "
      "slowdown other than the power cap (hw_slowdown, sw_thermal_slowdown, "
      "hw_thermal_slowdown, hw_power_brake_slowdown), SM clock (median - p5) / median at most "
      "{:.0f} % (rising to the boost clock is no fault); no samples fails; power capping is a "
      "note",
      rules.settle_s, 100 * rules.power_fraction, 100 * rules.clock_drop);
  std::vector<TestVerdict> out;
  // A verdict that lists failures fails, whatever its flag says.
  if (!v.pass || !v.failures.empty()) {
    const std::string why = v.failures.empty()
                                ? fmt::format("failed after {:.0f} s under load", seconds)
                                : join(v.failures, "; ");
    out.push_back(make_verdict("sustained.load", Status::kFail, why, load_rule, kSourceSustained));
  } else {
    std::vector<std::string> seen;
    if (v.median_power_w) seen.push_back(fmt::format("median power {:.0f} W", *v.median_power_w));
    if (v.sm_p5_mhz && v.sm_median_mhz && v.sm_p95_mhz)
      seen.push_back(fmt::format("SM clock {}-{} MHz around {} MHz", *v.sm_p5_mhz, *v.sm_p95_mhz,
                                 *v.sm_median_mhz));
    if (v.temperature_max_c) seen.push_back(fmt::format("at most {} °C", *v.temperature_max_c));
    seen.push_back(fmt::format("{} settled sample(s)", v.settled_samples));
    std::string reason = fmt::format("{:.0f} s under load: {}", seconds, join(seen, ", "));
    if (!v.notes.empty()) reason += "; " + join(v.notes, "; ");
    out.push_back(
        make_verdict("sustained.load", Status::kPass, reason, load_rule, kSourceSustained));
  }

  const std::string rate_rule =
      "a figure, not judged here: the node comparison (gemm.<precision>.node) judges rates";
  if (flops && std::isfinite(*flops) && *flops > 0)
    out.push_back(make_verdict(
        "sustained.rate", Status::kPass,
        fmt::format("mean GEMM rate {} over {:.0f} s", format_si(*flops, "FLOP/s"), seconds),
        rate_rule, kSourceSustained));
  else
    out.push_back(
        make_verdict("sustained.rate", Status::kSkip,
                     flops ? fmt::format("the GEMM rate {} FLOP/s is not a possible figure", *flops)
                           : std::string("the GEMM rate under the load was not measured"),
                     rate_rule, kSourceSustained));
  return out;
}

}  // namespace gpuvs::check
