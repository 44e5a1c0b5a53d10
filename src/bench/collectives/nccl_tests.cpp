// NVIDIA's nccl-tests beside gpuvs's own collectives (nccl.h): the same sizes,
// GPUs and environment; its out-of-place figures become results of their own ids.
#include <fmt/format.h>

#include <algorithm>
#include <span>
#include <string>
#include <vector>

#include "bench/collectives/nccl.h"
#include "comm/nccl_tests.h"
#include "comm/nccl_tests_results.h"

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
    comm::NcclTestsResultOptions options;
    options.op = op;
    options.ranks = n;
    options.devices = ctx.devices;
    options.graph = graph;
    options.buffers = "ncclMemAlloc";  // nccl-tests >= 2.19 with NCCL >= 2.19 always does
    // Run without -o and -r: nccl-tests' defaults, whatever columns its version prints.
    options.default_redop = "sum";
    options.default_root = 0;
    options.provenance = argv;
    const std::vector<Result> results = comm::nccl_tests_results(res, options);
    out.insert(out.end(), results.begin(), results.end());
  }
}

}  // namespace gpuvs
