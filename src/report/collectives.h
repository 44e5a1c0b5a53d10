// NCCL collective results for people (docs/collectives.md): per operation, a table by
// message size (time, p99, algbw, busbw, the CUDA-graph time, nccl-tests beside
// gpuvs), and the algorithm study: which NCCL_ALGO/NCCL_PROTO variant has the best
// busbw at each size and whether it beats the default clearly enough to recommend it.
//
// Results read (the contract with src/bench's collectives benchmark):
//   collective.<op>.busbw (B/s) and collective.<op>.time (s per operation, stats.p99 the
//   tail of batch means), parameters bytes, ranks, dtype, redop, algo, proto, graph,
//   busbw_factor; collective.<op>.{busbw,time}.nccl_tests, the same points measured by
//   nccl-tests (parameter tool).
// Invariants: a result whose status is not ok is never shown as a number (it reads
// "invalid", "n/a" or "error" with its reason); a run without collective results
// renders nothing (empty strings), so other reports are unchanged.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/run_file.h"

namespace gpuvs {

// True for the ids this file renders (the collective families of suite/produces.h): the generic
// result listings skip them so that a sweep of hundreds of points is not shown twice.
bool is_collective_result(const Result& r);

// ---- the algorithm study ----------------------------------------------------------

// The margins of the study. A variant is *recommended* over the default at a size
// only when its busbw beats the default's by more than kRecommendGain (5 %) and the
// noise (stddev / median) of both results is below the gap; the default is called
// *within 3 %* when the best variant is at most kTieGain (3 %) above it.
inline constexpr double kRecommendGain = 0.05;
inline constexpr double kTieGain = 0.03;

// One size of one operation: the variant with the best busbw among the ok eager
// (graph=false) gpuvs results, and the default's busbw.
struct StudyPoint {
  int64_t bytes = 0;
  std::string algo = "default";  // of the best variant; "default" when the default won
  std::string proto = "default";
  double best_busbw = 0;                // B/s
  double best_noise = 0;                // stddev / median
  std::optional<double> default_busbw;  // nullopt: the default is not ok (or absent) here
  double default_noise = 0;
  std::optional<double> gain;  // best / default (>= 1); nullopt without a default
  bool clear = false;          // gain > 1 + kRecommendGain and both noises < gain - 1
  int variants_ok = 0;         // ok variants at this size, the default included
};

enum class StudyVerdict {
  kDefault,    // the default is within 3 % of the best (or is the best)
  kClear,      // the variant beats the default clearly: > 5 % and beyond both noises
  kUnclear,    // the variant is ahead by more than 3 %, but not clearly
  kNoDefault,  // no ok default at these sizes: nothing to compare with
};

// Consecutive sizes with the same verdict and (except for kDefault) the same winner.
struct StudyRange {
  int64_t min_bytes = 0;
  int64_t max_bytes = 0;
  StudyVerdict verdict = StudyVerdict::kDefault;
  std::string algo = "default";  // the winner; "default" for kDefault ranges
  std::string proto = "default";
  std::vector<std::string> best;             // distinct best variants in the range, "Tree/LL"
  std::optional<double> min_gain, max_gain;  // best / default over the range
};

struct StudyOp {
  std::string op;  // "all_reduce"
  int64_t ranks = 0;
  int variants = 0;                // distinct (algo, proto) variants measured
  std::vector<StudyPoint> points;  // ascending size
  std::vector<StudyRange> ranges;  // points merged, ascending size
  // Variants not measured (NCCL refused them, or they were not tried), by status and
  // reason ("n/a: NCCL refused ..." -> {"Tree/LL"}), and invalid points ("Tree/LL at
  // 4 KiB: invalid: <reason>"): shown, never counted as winners.
  std::map<std::string, std::vector<std::string>> unsupported;
  std::vector<std::string> invalid;
  std::string recommendation;  // one line, without a trailing newline
};

// Per operation (and rank count) that has at least one non-default eager variant;
// empty when the run holds no algorithm study.
std::vector<StudyOp> study_winners(const RunFile& run);

// "Tree/LL", "Ring/default", "default".
std::string variant_label(const std::string& algo, const std::string& proto);

// "8 B", "64 KiB", "8 B – 64 KiB".
std::string size_range_label(int64_t min_bytes, int64_t max_bytes);

// ---- renderings -------------------------------------------------------------------

// For the terminal summary: a header (ranks, launch mode, hosts, NCCL environment),
// one table per operation, and the algorithm study. Empty without collective results.
std::string render_collectives(const RunFile& run);

// Registers a chart specification (the HTML report's island format, docs/report.md)
// and returns the HTML of its container.
using AddChart = std::function<std::string(nlohmann::ordered_json)>;

// For the HTML report: one <section> with the same tables, escaped, and busbw-vs-size
// charts through `add_chart` (none when it is empty: a report without charts). `id`
// is the section's id ("collectives", "collectives-run-2"), `title` its heading.
// Empty without collective results.
std::string render_collectives_html(const RunFile& run, const std::string& id,
                                    const std::string& title, const AddChart& add_chart);

}  // namespace gpuvs
