#include "suite/bench_index.h"

#include <fmt/format.h>

#include <map>

namespace gpuvs {

namespace {

// "memory" for "bench/memory/hbm.cpp"; empty for a file outside bench/<folder>/.
std::string_view bench_folder(std::string_view source) {
  constexpr std::string_view kBench = "bench/";
  if (!source.starts_with(kBench)) return {};
  source.remove_prefix(kBench.size());
  const size_t slash = source.find('/');
  return slash == std::string_view::npos ? std::string_view{} : source.substr(0, slash);
}

}  // namespace

std::string_view source_relative_to_src(std::string_view file) {
  const size_t at = file.rfind("src/");
  return at == std::string_view::npos ? file : file.substr(at + 4);
}

std::vector<EntryPoint> entry_points_of(std::span<const ScannedEntry> scanned) {
  std::vector<EntryPoint> out;
  for (const ScannedEntry& e : scanned)
    out.push_back({e.name, e.source});
  return out;
}

std::vector<std::string> entry_point_problems(std::span<const BenchmarkDef> table,
                                              std::span<const EntryPoint> entries) {
  std::vector<std::string> problems;
  std::map<std::string_view, std::string_view> source_of;
  for (const EntryPoint& e : entries) {
    const auto [it, fresh] = source_of.emplace(e.name, e.source);
    if (!fresh)
      problems.push_back(fmt::format("benchmark {} is registered twice: in {} and in {}", e.name,
                                     it->second, e.source));
  }
  std::map<std::string_view, const BenchmarkDef*> row_of;
  for (const BenchmarkDef& d : table)
    row_of.emplace(d.name, &d);
  for (const BenchmarkDef& d : table) {
    const auto it = source_of.find(d.name);
    if (it == source_of.end()) {
      problems.push_back(fmt::format(
          "benchmark {} of the table (suite/produces_rows.cpp) has no entry point: a line "
          "GPUVS_BENCHMARK(run_function, \"{}\"); in a file of src/bench/{}/",
          d.name, d.name, d.group));
      continue;
    }
    const std::string_view folder = bench_folder(it->second);
    if (!folder.empty() && folder != d.group)
      problems.push_back(
          fmt::format("benchmark {} is registered in {}, but its group is {}: "
                      "its file belongs in src/bench/{}/",
                      d.name, it->second, d.group, d.group));
    if (folder.empty() && d.group != "model")
      problems.push_back(
          fmt::format("benchmark {} is registered in {}, outside src/bench/; only "
                      "models are registered elsewhere (suite/registry.cpp)",
                      d.name, it->second));
  }
  for (const auto& [name, source] : source_of)
    if (!row_of.count(name))
      problems.push_back(fmt::format(
          "{} registers benchmark {}, which the table (suite/produces_rows.cpp) has no row for",
          source, name));
  return problems;
}

}  // namespace gpuvs
