// What `gpuvs bench collectives` measures: operations, message sizes, CUDA graphs,
// NCCL algorithms and protocols, timeout, launch. Parsing of the command-line forms
// lives here (plain C++, unit-tested); the benchmark lives in bench/collectives.*.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "comm/launch.h"
#include "core/units.h"

namespace gpuvs::comm {

// The seven operations, in nccl-tests order of its binaries.
std::span<const std::string_view> collective_ops();
// Values NCCL_ALGO and NCCL_PROTO may take (NCCL 2.28); which ones NCCL accepts on a
// machine is found by trying them.
std::span<const std::string_view> nccl_algos();
std::span<const std::string_view> nccl_protos();

enum class GraphMode { kAuto, kOff, kOn };  // auto: also as CUDA graphs up to 1 MiB

struct CollectiveOptions {
  std::vector<std::string> ops;  // empty: every op
  int64_t min_bytes = 8;
  int64_t max_bytes = int64_t{4} << 30;
  double factor = 2;
  std::vector<int64_t> sizes;  // explicit sizes (gpuvs run's few); overrides the range
  bool sizes_given = false;    // --sizes was on the command line
  GraphMode graph = GraphMode::kAuto;
  std::vector<std::string> algos;   // study: empty = every value NCCL accepts
  std::vector<std::string> protos;  // study: empty = every value NCCL accepts
  double timeout_s = 60;
  // Send/receive buffers from ncclMemAlloc (as nccl-tests) instead of cudaMalloc.
  bool nccl_mem_alloc = false;
  std::string nccl_tests_dir;  // run nccl-tests beside gpuvs (single process only)
  LaunchRequest launch;
};

inline constexpr int64_t kGraphAutoMaxBytes = int64_t{1} << 20;

// How a message size is typed: "8", "64K", "4G" (nccl-tests' K, M, G and also T, in
// either case, are KiB, MiB, GiB, TiB; so are Ki, Mi, Gi, Ti), "64KiB", "16B", "2GB"
// (spelled with B, decimal: 2·10^9), "1.5K" (1536); a positive whole number of bytes,
// at most 2^62 (core/units' parse_number).
NumberRules message_size_rules();
// A message size under message_size_rules(); nullopt when the text is not one.
std::optional<int64_t> parse_size(std::string_view text);
// "MIN:MAX[:FACTOR]" into the options' range; UsageError when malformed. FACTOR is a
// plain number above 1.
void parse_size_range(std::string_view text, CollectiveOptions& options);
// "all_reduce,broadcast" (also "allreduce"); UsageError naming the known ops.
std::vector<std::string> parse_ops(std::string_view text);
// "Ring,Tree" or "all", case-insensitive, against `known`; canonical spelling out.
std::vector<std::string> parse_nccl_values(std::string_view text,
                                           std::span<const std::string_view> known,
                                           std::string_view what);
GraphMode parse_graph_mode(std::string_view text);

// The message sizes to measure, ascending.
std::vector<int64_t> collective_sizes(const CollectiveOptions& options);
// The ops to measure, in canonical order.
std::vector<std::string> selected_ops(const CollectiveOptions& options);

}  // namespace gpuvs::comm
