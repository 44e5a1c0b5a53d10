// The GPU half of `gpuvs check`'s GEMM consistency (docs/check.md): one GEMM of fixed
// random operands (the same seeds on every GPU), run several times with cuBLASLt's
// first heuristic algorithm (no timing picks it, so every GPU of a model takes the
// same one), the bits of D hashed after every run, the rate measured, and D checked
// against a reference. check/node_compare.h judges the figures across the node.
#pragma once

#include <string>

#include "bench/compute/gemm_runner.h"
#include "check/node_compare.h"

namespace gpuvs::check {

struct GemmConsistencyOptions {
  GemmPrecision precision = GemmPrecision::kBf16;
  GemmShape shape{4096, 4096, 4096};
  int runs = 8;           // hashed runs
  MeasureOptions timing;  // for the rate
};

struct GemmConsistency {
  GemmRunFigures figures;  // hashes and rate, for judge_node
  std::string algorithm;   // the algorithm as cuBLASLt describes it
  bool valid = false;      // D against the reference (bench/compute/gemm_check.h)
  std::string validation;  // what the check found
};

GemmConsistency run_gemm_consistency(const SystemInfo& system, int device,
                                     const GemmConsistencyOptions& options, WallClock& clock);

}  // namespace gpuvs::check
