// What a collective result carries besides its figure (docs/results.md, Collective
// results): the bus bandwidth factor of nccl-tests' definition and the parameters
// that tell one configuration from another. One definition for gpuvs's own
// collectives (bench/collectives) and for nccl-tests' figures, measured beside gpuvs
// or imported from a log, so that the two meet in one row of a comparison.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "core/run_file.h"

namespace gpuvs::comm {

// all_reduce, reduce_scatter and reduce combine values (they take a reduce op).
bool collective_reduces(std::string_view op);
// broadcast and reduce have a root rank.
bool collective_has_root(std::string_view op);

// busbw = algbw x this, n = ranks: all_reduce 2(n-1)/n; all_gather, reduce_scatter and
// alltoall (n-1)/n; broadcast, reduce and sendrecv 1. Error for another op.
double busbw_factor(std::string_view op, int ranks);

// How a collective ran, beyond its op, size and ranks.
struct CollectiveLabels {
  std::string dtype = "float32";
  std::string algo = "default";   // NCCL_ALGO, or "default"
  std::string proto = "default";  // NCCL_PROTO, or "default"
  bool graph = false;             // launched as a CUDA graph
  std::string buffers = "cudaMalloc";
  std::optional<std::string> redop;  // written for the reducing ops only
  std::optional<int64_t> root;       // written for the rooted ops only
};

// The parameters of a collective result of `op` at `bytes` over `ranks`: bytes, ranks,
// dtype, algo, proto, graph, busbw_factor (a double), buffers, and redop / root where
// the op has one and the labels know it.
std::map<std::string, ParamValue> collective_parameters(std::string_view op, int64_t bytes,
                                                        int ranks, const CollectiveLabels& labels);

}  // namespace gpuvs::comm
