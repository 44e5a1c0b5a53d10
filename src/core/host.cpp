#include "core/host.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <fstream>
#include <thread>

namespace gpuvs {

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0 || buf[0] == '\0') return "unknown";
  return buf;
}

std::string host_os() {
  utsname u{};
  if (uname(&u) != 0) return "unknown";
  return std::string(u.sysname) + " " + u.release + " " + u.machine;
}

static std::string trim(std::string s) {
  const auto b = s.find_first_not_of(" \t");
  const auto e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

CpuInfo host_cpu() {
  CpuInfo cpu;
  std::ifstream info("/proc/cpuinfo");
  for (std::string line; std::getline(info, line);) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) cpu.model = trim(line.substr(colon + 1));
      break;
    }
  }
  if (cpu.model.empty()) cpu.model = "unknown";
  if (const unsigned n = std::thread::hardware_concurrency(); n > 0) cpu.logical_cores = int(n);
  std::ifstream mem("/proc/meminfo");
  for (std::string key; mem >> key;) {
    if (key == "MemTotal:") {
      long long kib = 0;
      if (mem >> kib) cpu.memory_bytes = kib * 1024;
      break;
    }
    mem.ignore(1 << 12, '\n');
  }
  return cpu;
}

std::string utc_now_iso8601() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

double monotonic_seconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

}  // namespace gpuvs
