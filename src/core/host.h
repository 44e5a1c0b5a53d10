// Facts about the host, read without any GPU library: name, OS, CPU, memory, time.
#pragma once

#include <string>

#include "core/run_file.h"

namespace gpuvs {

std::string host_name();        // gethostname(); "unknown" when it fails
std::string host_os();          // "Linux 6.1.0-18-amd64 x86_64" (uname)
CpuInfo host_cpu();             // /proc/cpuinfo model name, cores, /proc/meminfo MemTotal
std::string utc_now_iso8601();  // "2026-11-30T10:48:43Z"
double monotonic_seconds();     // steady clock, for intervals and deadlines

}  // namespace gpuvs
