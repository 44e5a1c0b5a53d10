// The rules of `gpuvs tune`: from the measured results of a run file to the settings
// recommended for one GPU (docs/tune-rules.md gives each rule's reasons). Plain C++,
// pure functions of the run file: no GPU, no clock, so every rule is tested on
// synthetic runs (tests/cpu/test_tune_rules.cpp).
//
// Invariants:
//  - only `run.results` (and `run.system` for the GPU count, `run.comm` for the user's
//    NCCL variables) is read; a result whose status is not ok is never used, and a rule
//    left without input says so, with the results' reasons, in an Absent;
//  - a result counts for GPU `gpu` when its devices are exactly {gpu} (per-GPU results);
//    collective results count when their devices include `gpu` or are empty (ranks of
//    other processes);
//  - every Setting's rests_on lists the results it used: result id, the parameters
//    that tell the configuration apart, value and unit as the run file has them, basis
//    "measured"; a ratio it computed is one more Evidence, basis "derived", unit "x",
//    with the numerator's id and parameters plus "over": the denominator's id and
//    parameters as text. Ratios are only taken between measured results;
//  - ties: two measured figures are "within noise" when their ratio differs from 1 by
//    at most the larger of the two results' noise (stats.noise) and kMinNoise;
//  - where one configuration was measured more than once, the last result in the run
//    counts (the study and the report take the latest too).
//
// The contract with the measuring side (the results each rule reads; `tune` produces
// exactly these). Model results are `model.{model}.{mode}.{precision}` (kModelRate,
// items/s) with parameters batch, accumulate, global_batch, graph, seq and attention as
// the trainer writes them; "the configuration" below is one seq and attention (the
// most common among the model and mode's results) and deterministic off.
//  1. precision (per model, mode): kModelRate with graph true, accumulate 1, at one
//     common batch (the batch measured for the most precisions, the smallest of equals),
//     one result per precision among fp32, tf32, fp16, bf16 and (bert-large) fp8.
//  2. batch: kModelMaxBatch `model.{model}.{mode}.{precision}.max_batch` of a `--batch
//     max` search at the chosen precision (value: the largest batch that fits;
//     parameters recommended_batch, headroom, first_failure), headroom equal to the
//     request's. batch_knee: kModelRate at the chosen precision, graph true, accumulate
//     1, at two or more batches (a ladder, the search's recommended batch included).
//  3. cuda_graph: kModelRate at the chosen precision, accumulate 1, with graph true and
//     with graph false at one batch: the knee, else the recommended batch, else the
//     largest batch measured both ways.
//  4. global batch N (train, request.global_batch): kModelRate at the chosen precision,
//     graph true, global_batch == N, for the candidate (batch, accumulate) pairs.
//  5. GEMM per request.gemm_shapes entry "MxNxK:precision": `compute.gemm.{p}` (kGemm)
//     with parameters m, n, k equal to the shape, for the shape's precision ("fp8" is
//     fp8_e4m3) and its comparison: tf32 and fp32 for an fp32 or tf32 shape, fp8_e4m3
//     and bf16 for a bf16, fp16 or fp8 shape. Parameters algorithm_index, algorithm_id,
//     tile_id, stages_id, splitk, algorithms_tried name the algorithm.
//  6. NCCL (two or more GPUs): the algorithm study's `collective.{op}.busbw`
//     (kCollectiveBusbw) with graph false, per bytes, for algo/proto "default" (NCCL's
//     own choice) and each NCCL_ALGO x NCCL_PROTO variant; per op at its largest rank
//     count.
//  7. host: `host.{h2d,d2h,bidirectional}.{pinned,pageable}` (kHostCopy, per bytes) and
//     `host.zerocopy.sparse` (kZeroCopySparse) with its parameter "verdict", the
//     benchmark's own measured answer; plus the figures the verdict names
//     (host.zerocopy.read, host.zerocopy.reread, host.h2d.pinned at its buffer_bytes).
//
// Settings made (scope, key, value type):
//   {model, mode}: precision (string), batch and batch_knee (int), cuda_graph (bool);
//   {model, "train", "global batch N"}: micro_batch, accumulation (int);
//   {"gemm", shape}: algorithm (string), tf32 or fp8 (bool: it pays);
//   {"nccl", op, "8MiB-64MiB"}: NCCL_ALGO, NCCL_PROTO (string or "unset"), env empty:
//     an environment variable applies to every size, so a per-range answer is advice
//     for a job whose collectives are of that size, never an export line;
//   {"nccl", "all sizes"}: NCCL_ALGO, NCCL_PROTO with env set only when one variant
//     wins or ties at every measured size of every op and beats NCCL's own choice
//     somewhere; else value "unset" and env empty;
//   {"host", direction}: host_memory ("pinned", "pageable" or "either");
//   {"host"}: zero_copy (the verdict's answer: "no" or "sparse access only").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/run_file.h"
#include "tune/tune_result.h"

namespace gpuvs::tune {

// The thresholds (docs/tune-rules.md says why each is what it is).
inline constexpr double kMinNoise = 0.01;    // a tie is at least this wide
inline constexpr double kFp8MinGain = 0.05;  // fp8 must be >= 1.05x the best other
inline constexpr double kKneeShare = 0.03;   // the knee: within 3 % of the best batch
inline constexpr double kPaysGain = 0.05;    // tf32 / fp8 GEMMs pay from 1.05x

// What a rule found: the settings and the sections it could not fill.
struct Recommendations {
  std::vector<Setting> settings;
  std::vector<Absent> absent;

  void add(Recommendations&& other);
  // The value of the first setting with `key`, or nullptr.
  const ParamValue* value_of(std::string_view key) const;
};

// Every rule for GPU `gpu` of the run: for each model of the request and each mode
// with results, then the GEMM shapes, NCCL and host transfers. Fills settings,
// absent and gpu_index; the fingerprint, request, dates and paths are the caller's.
DeviceTune recommend(const RunFile& run, int gpu, const TuneRequest& request);

// The rules one by one, for a caller that measures in steps (the precision before
// the batch ladder, the knee before the eager run). `model` "bert-large", `mode`
// "train" or "infer", `precision` as the model results spell it ("bf16").
Recommendations recommend_precision(const RunFile& run, int gpu, std::string_view model,
                                    std::string_view mode);
Recommendations recommend_batch(const RunFile& run, int gpu, std::string_view model,
                                std::string_view mode, std::string_view precision, double headroom);
// `preferred`: batches to compare at, in order of preference (the knee, the batch);
// else the largest batch measured both ways.
Recommendations recommend_cuda_graph(const RunFile& run, int gpu, std::string_view model,
                                     std::string_view mode, std::string_view precision,
                                     const std::vector<int64_t>& preferred);
Recommendations recommend_global_batch(const RunFile& run, int gpu, std::string_view model,
                                       std::string_view precision, int64_t global_batch);
// `shape`: "MxNxK:precision" as TuneRequest::gemm_shapes holds it.
Recommendations recommend_gemm(const RunFile& run, int gpu, std::string_view shape);
Recommendations recommend_nccl(const RunFile& run, int gpu);
Recommendations recommend_host(const RunFile& run, int gpu);

// "MxNxK:precision" read; nullopt when malformed (the CLI checks shapes before).
struct GemmShapeRequest {
  int64_t m = 0, n = 0, k = 0;
  std::string precision;  // as given: "bf16", "fp8"
};
std::optional<GemmShapeRequest> parse_gemm_shape(std::string_view text);

}  // namespace gpuvs::tune
