#include "bench/benchmarks.h"

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace gpuvs {

const BenchmarkEntry& bench_entry(std::string_view name) {
  std::string known;
  for (const BenchmarkEntry* e : bench_entries()) {
    if (e->name == name) return *e;
    known += fmt::format(" {}", e->name);
  }
  throw std::logic_error(fmt::format("no benchmark {} in bench/; registered:{}", name, known));
}

}  // namespace gpuvs
