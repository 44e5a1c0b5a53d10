// nccl-tests' figures as gpuvs results: what `gpuvs bench collectives --nccl-tests
// DIR` records of the run it starts and what `gpuvs import nccl-tests LOG` records of
// a saved log, by one definition (docs/results.md, Collective results).
//
// Each row with out-of-place figures gives two results, collective.<op>.busbw.nccl_tests
// (B/s) and collective.<op>.time.nccl_tests (s), of one sample each (nccl-tests prints
// one figure per size, the mean over its iterations), with the parameters of
// comm/collective_params.h at the row's size and a `tool` parameter ("nccl-tests
// 2.17.6"). In-place figures are not recorded: gpuvs's own collectives run out of
// place. A result is invalid when nccl-tests counted wrong elements in it, or printed
// a figure that cannot be (core/units.h's quantity_problem); where it did not check
// (-c 0, "N/A") or printed its largest error instead of a count (versions before
// 2022), the validation says so. Rows with a figure that is not finite are left out.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "comm/nccl_tests.h"
#include "core/run_file.h"

namespace gpuvs::comm {

struct NcclTestsResultOptions {
  std::string op;            // "all_reduce"
  int ranks = 0;             // GPUs taking part
  std::vector<int> devices;  // the results' devices ([] across processes)
  bool graph = false;        // -G runs: CUDA graphs
  std::string buffers;       // "ncclMemAlloc", "cudaMalloc", or "unknown"
  // What a row without a redop or root column ran with (versions that print none):
  // nccl-tests' defaults (sum, root 0) where gpuvs ran it without -o and -r; unknown
  // (left out) for a log from elsewhere.
  std::optional<std::string> default_redop;
  std::optional<int64_t> default_root;
  std::string provenance;  // said in each validation: the command line, the log's name
};

// "nccl-tests 2.17.6", or "nccl-tests (version not printed)" before it printed one.
std::string nccl_tests_tool(const NcclTestsOutput& output);

// The results of every row of `output` that has out-of-place time and bus bandwidth
// and moved something (count and size above 0), in row order.
std::vector<Result> nccl_tests_results(const NcclTestsOutput& output,
                                       const NcclTestsResultOptions& options);

// nccl-tests' type names in gpuvs's words: float -> float32, half -> float16,
// double -> float64; other names (bfloat16, int8, f8e4m3, ...) as printed.
std::string nccl_tests_dtype(std::string_view type);

}  // namespace gpuvs::comm
