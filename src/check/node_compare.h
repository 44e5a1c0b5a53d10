// The node-level half of `gpuvs check`'s GEMM consistency (docs/check.md): every GPU of
// one model must give the same bits for the same GEMM on the same operands, and none
// may be much slower than its node's median, as DCGM's diagnostic flags a GPU whose
// GEMM rate is far from its peers'. Plain C++ (no CUDA), tested on the CPU.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gpuvs::check {

// What one GPU gave for one GEMM (check/gemm_consistency.h measures it).
struct GemmRunFigures {
  int gpu = 0;
  std::string gpu_name;          // GPUs of different models are not compared bit for bit
  std::string precision;         // "bf16", "fp32"
  std::vector<uint64_t> hashes;  // of D after each run
  double flops = 0;              // FLOP/s, median
};

struct GemmNodeVerdict {
  int gpu = 0;
  std::string precision;
  bool repeatable = false;   // every run of this GPU gave the same bits
  bool matches_node = true;  // same bits as the other GPUs of its model (true alone)
  bool slow = false;         // more than `slow_fraction` below the node's median rate
  double median_flops = 0;   // the node's median for this precision
  int peers = 0;             // GPUs of the same model and precision, this one included
  std::string reason;        // one line, empty when all is well
};

// Default: 5 % below the median, as DCGM's diagnostic flags a GPU's GEMM rate.
inline constexpr double kSlowFraction = 0.05;

// One verdict per entry of `figures`, in order. The median is over the GPUs of the same
// model and precision; with one GPU there is no node to compare with (matches_node
// true, slow false, peers 1).
std::vector<GemmNodeVerdict> judge_node(const std::vector<GemmRunFigures>& figures,
                                        double slow_fraction = kSlowFraction);

}  // namespace gpuvs::check
