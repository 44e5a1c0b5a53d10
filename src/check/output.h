// What `gpuvs check` writes: the terminal verdicts, the gpuvs.check/1 JSON document
// and the Prometheus textfile-collector text (docs/check.md describes all three
// field by field). Pure functions of a CheckReport.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "check/levels.h"

namespace gpuvs::check {

inline constexpr const char* kCheckSchema = "gpuvs.check/1";

// One block per GPU (its verdict, then one line per test), then the summary line.
std::string render_text(const CheckReport& report);

nlohmann::ordered_json to_json(const CheckReport& report);

// Text exposition format 0.0.4, all gauges, labels host, gpu (NVML index), uuid and
// pci_bus_id: gpuvs_check_status (the GPU), gpuvs_check_test{test} (0 pass, 1 warn,
// 2 fail; a skipped test has no line), and the raw counters of the last reading.
std::string prometheus_text(const CheckReport& report);

}  // namespace gpuvs::check
