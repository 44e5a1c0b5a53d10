// NVIDIA's nccl-tests beside gpuvs's own collectives (nccl.h): the same sizes,
// GPUs and environment; its out-of-place figures become results of their own ids.
#include <fmt/format.h>

#include <algorithm>
#include <span>
#include <string>
#include <vector>

#include "bench/collectives/nccl.h"
#include "comm/nccl_tests.h"
#include "core/stats.h"
#include "suite/produces.h"

namespace gpuvs {

// NVIDIA's nccl-tests at the same sizes, same GPUs, same environment, one process
// driving them all: its out-of-place figures as results beside ours.
void run_nccl_tests_beside(const BenchContext& ctx, const std::string& op,
                           std::span<const int64_t> sizes, std::vector<Result>& out) {
  const comm::CollectiveOptions& o = *ctx.collectives;
  const int n = static_cast<int>(ctx.devices.size());
  for (bool graph : {false, true}) {
    if (graph && o.graph == comm::GraphMode::kOff) continue;
    const int64_t max_bytes = graph && o.graph == comm::GraphMode::kAuto
                                  ? std::min<int64_t>(sizes.back(), comm::kGraphAutoMaxBytes)
                                  : sizes.back();
    if (max_bytes < sizes.front()) continue;
    comm::NcclTestsRun run;
    run.dir = o.nccl_tests_dir;
    run.op = op;
    run.min_bytes = sizes.front();
    run.max_bytes = max_bytes;
    run.factor = o.sizes.empty() ? o.factor : 2;
    run.gpus = n;
    // 100 operations per timing (nccl-tests' default is 20): gpuvs's batches last at
    // least 1 ms, about 80 operations at 8 B; with equal batch lengths, the fixed cost
    // of starting and draining a batch weighs the same on both sides.
    run.iters = 100;
    run.warmup = 20;
    run.graph_launches = graph ? 10 : 0;
    run.timeout_s = std::max(600.0, o.timeout_s);
    if (ctx.progress)
      ctx.progress(fmt::format("nccl-tests {}{}", comm::nccl_tests_binary(op), graph ? " -G" : ""));
    const comm::NcclTestsOutput res = comm::run_nccl_tests(run);
    std::string argv;
    for (const auto& a : comm::nccl_tests_argv(run))
      argv += (argv.empty() ? "" : " ") + a;
    const std::string tool =
        fmt::format("nccl-tests {}", res.version.empty() ? "(version not printed)" : res.version);
    for (const comm::NcclTestsRow& row : res.rows) {
      if (!row.oop_time_us || !row.oop_busbw_gbs) continue;
      const auto shape = op_shape(op, row.size_bytes, n);
      if (!shape) continue;
      CollectiveSweep labels;
      labels.nccl_mem_alloc = true;  // nccl-tests >= 2.19 with NCCL >= 2.19 always does
      auto params = parameters(op, *shape, n, labels, graph);
      params["bytes"] = row.size_bytes;
      params["tool"] = tool;
      const bool ok = row.oop_wrong.value_or(0) == 0;
      auto make = [&](std::string id, std::string name, double value, std::string unit) {
        Result r;
        r.id = std::move(id);
        r.name = std::move(name);
        r.devices = ctx.devices;
        r.parameters = params;
        r.value = value;
        r.unit = std::move(unit);
        r.bytes_per_iteration = static_cast<double>(row.size_bytes);
        r.samples = {value};
        r.stats = compute_stats(r.samples);
        r.validation = row.oop_wrong ? fmt::format("nccl-tests checked the data: {} wrong ({})",
                                                   *row.oop_wrong, argv)
                                     : fmt::format("nccl-tests did not check the data ({})", argv);
        if (!ok) {
          r.status = Status::kInvalid;
          r.status_reason = fmt::format("nccl-tests reported {} wrong elements", *row.oop_wrong);
        }
        out.push_back(std::move(r));
      };
      make(result_id(Family::kNcclTestsBusbw, {op}),
           fmt::format("{} bus bandwidth (nccl-tests)", op), *row.oop_busbw_gbs * 1e9, "B/s");
      make(result_id(Family::kNcclTestsTime, {op}),
           fmt::format("{} time per operation (nccl-tests)", op), *row.oop_time_us * 1e-6, "s");
    }
  }
}

}  // namespace gpuvs
