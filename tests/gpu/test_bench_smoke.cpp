// Every registered benchmark runs once on GPU 0 with a tiny budget (the design guide's
// smoke test): it must give at least one ok result with an id of its own row of the
// table, a finite positive value, and every result it gives must be of the table.
// Benchmarks of every selected GPU at once skip with a reason on a machine with one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "comm/collective_options.h"
#include "gpu/probe.h"
#include "gpu_test_util.h"
#include "models/run_options.h"
#include "suite/registry.h"

namespace gpuvs {
namespace {

// One op at one size, where the algorithm study still tries NCCL's every choice.
comm::CollectiveOptions tiny_collectives() {
  comm::CollectiveOptions o;
  o.ops = {"all_reduce"};
  o.sizes = {int64_t{1} << 20};
  o.sizes_given = true;
  return o;
}

// One small inference configuration instead of `gpuvs run`'s table of models.
models::ModelRunOptions tiny_model() {
  models::ModelRunOptions run;
  run.config.model = "resnet50";
  run.config.mode = models::Mode::kInfer;
  run.config.batch = 8;
  run.config.autotune = false;
  run.steps = 3;
  return run;
}

std::vector<std::string> registered_names() {
  std::vector<std::string> names;
  for (const BenchmarkInfo& b : benchmarks())
    names.emplace_back(b.name);
  return names;
}

class BenchSmoke : public ::testing::TestWithParam<std::string> {};

TEST_P(BenchSmoke, RunsOnceWithATinyBudget) {
  GPUVS_REQUIRE_GPU();
  const std::vector<std::string> name = {GetParam()};
  const std::vector<const BenchmarkInfo*> selected = select_benchmarks(name);
  ASSERT_EQ(selected.size(), 1u);
  const BenchmarkInfo& bench = *selected.front();
  const BenchmarkDef* row = find_benchmark_def(bench.name);
  ASSERT_NE(row, nullptr);
  const SystemInfo system = probe_system();
  std::vector<int> devices = {0};
  if (bench.scope == BenchScope::kAllDevices) {
    if (system.gpus.size() < 2)
      GTEST_SKIP() << bench.name << " measures between GPUs; this machine has "
                   << system.gpus.size();
    devices = {0, 1};
  }
  const comm::CollectiveOptions collectives = tiny_collectives();
  const models::ModelRunOptions model = tiny_model();
  BenchContext ctx{.system = system,
                   .device = 0,
                   .options = tiny_options(),
                   .quick = true,
                   .clock = steady_wall_clock(),
                   .devices = devices,
                   .collectives = &collectives,
                   .model = &model};
  const std::vector<Result> results = bench.run(ctx);
  expect_ids_in_table(results);
  const auto own = [&](const Result& r) {
    const auto m = match_result_id(r.id);
    return m && std::find(row->writes.begin(), row->writes.end(), m->family->family) !=
                    row->writes.end();
  };
  const auto good = std::count_if(results.begin(), results.end(), [&](const Result& r) {
    return own(r) && r.status == Status::kOk && std::isfinite(r.value) && r.value > 0;
  });
  EXPECT_GT(good, 0) << bench.name << " gave " << results.size()
                     << " results, none ok with an id of its row and a positive value";
  for (const Result& r : results)
    EXPECT_TRUE(own(r)) << bench.name << " wrote " << r.id << ", not an id of its row";
}

INSTANTIATE_TEST_SUITE_P(Registered, BenchSmoke, ::testing::ValuesIn(registered_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string n = info.param;
                           std::replace(n.begin(), n.end(), '.', '_');
                           return n;
                         });

}  // namespace
}  // namespace gpuvs
