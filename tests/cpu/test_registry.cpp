// The runner's registrations as the CUDA build links them (no GPU needed): the table
// of benchmarks joins its entry points without an error, and what was linked is what
// the scan of the sources found, so the CPU build's check (test_produces) holds for
// the binary too.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <utility>

#include "bench/benchmarks.h"
#include "suite/bench_index.h"
#include "suite/registry.h"

namespace gpuvs {
namespace {

TEST(Registry, TheLinkedEntryPointsAreTheScannedOnes) {
  ASSERT_NO_THROW(benchmarks());
  using Entry = std::pair<std::string, std::string>;
  std::set<Entry> linked, scanned;
  for (const BenchmarkEntry* e : bench_entries())
    linked.emplace(e->name, source_relative_to_src(e->source));
  for (const ScannedEntry& e : scanned_entries())
    if (e.source.starts_with("bench/")) scanned.emplace(e.name, e.source);
  EXPECT_EQ(linked, scanned);
  ASSERT_EQ(benchmarks().size(), benchmark_defs().size());
  for (const BenchmarkInfo& b : benchmarks())
    EXPECT_TRUE(b.run) << b.name;
  EXPECT_EQ(bench_entry("memory.hbm").name, "memory.hbm");
  EXPECT_THROW(bench_entry("model.end_to_end"), std::logic_error);
}

}  // namespace
}  // namespace gpuvs
