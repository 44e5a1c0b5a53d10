// The advisor: for every candidate GPU type of the catalogue, the fewest GPUs that
// hold the model (or the count that meets a deadline, or the count given), the time
// and the cost, ranked; plus what the naive rule "more than 10B parameters → H200,
// else budget decides" would have picked. Every figure keeps the arithmetic that
// produced it (--explain shows it).
//
// Ranking: candidates that fit (and meet --max-days) first, by cost when the prices
// file prices them, else by GPU-hours (training) or tokens/s per GPU (inference);
// then those that do not fit; then those the catalogue cannot judge (no figure).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "advise/memory.h"
#include "advise/model.h"
#include "advise/prices.h"
#include "advise/throughput.h"
#include "specs/catalogue.h"

namespace gpuvs::advise {

enum class Mode { kTrain, kInfer };
// kGpuHours: GPU-hours of the run (training) or per million output tokens
// (inference): what the cost would be at one price for every GPU.
enum class RankBy { kAuto, kCost, kTime, kGpuHours };

// Defaults of docs/advise.md. MFU: transformers 0.40 (PaLM reached 46.2 % at 540B;
// ml-engineering calls ~50 % a win); CNNs 0.20 (NVIDIA's published A100 ResNet-50
// mixed-precision training, 2470 img/s × 24.5 GFLOP = 61 TFLOP/s, is 19.4 % of 312).
inline constexpr double kDefaultMfuTransformer = 0.40;
inline constexpr double kDefaultMfuCnn = 0.20;
// Llama 2 trained with 4M-token batches (Touvron et al. 2023, §2.2).
inline constexpr double kDefaultBatchTokens = 4 * 1024 * 1024;
// Goyal et al. 2017 trained ResNet-50 with 8192-image batches at unchanged accuracy.
inline constexpr int64_t kDefaultCnnGlobalBatch = 8192;
// NVIDIA DeepLearningExamples train ResNet-50 with 256 images per GPU (the setting of
// the published A100 figures).
inline constexpr int64_t kDefaultCnnMicroBatch = 256;
inline constexpr double kChinchillaTokensPerParam = 20;  // Hoffmann et al. 2022
inline constexpr double kNaiveThresholdParams = 10e9;
inline constexpr const char* kNaivePick = "H200-SXM";

struct Request {
  Mode mode = Mode::kTrain;
  Model model;
  TrainingSetup train;
  InferenceSetup infer;
  Assumptions assumptions;                    // assumptions.mfu is set from `mfu` or the default
  std::optional<double> mfu;                  // as given
  std::optional<double> tokens;               // training a transformer
  std::optional<double> samples;              // training a CNN
  std::optional<int64_t> global_batch;        // sequences (CNN: samples) per step
  std::optional<double> global_batch_tokens;  // as given in tokens; fill_defaults sets global_batch
  std::optional<int64_t> micro_batch;         // default: transformer 1 sequence, CNN 256 samples
  std::optional<int64_t> context;             // inference; default: the model's sequence length
  std::optional<int> gpus;                    // fixed count
  std::optional<int> tp;                      // fixed tensor-parallel degree
  std::optional<double> max_days;             // training deadline
  std::vector<std::string> candidates;        // GPU names; empty = the whole catalogue
  RankBy rank_by = RankBy::kAuto;
  int max_gpus = 16384;
};

struct Candidate {
  const GpuSpec* gpu = nullptr;
  bool usable = false;  // the catalogue has the figures needed
  bool fits = false;
  bool meets_deadline = true;  // --max-days
  Layout layout;
  double capacity = 0;  // memory.size
  MemoryBreakdown memory;
  std::optional<ComputeRate> rate;
  Bandwidth link;                      // inside a node (training)
  std::optional<Bandwidth> memory_bw;  // inference
  TrainingTime time;
  InferenceSpeed speed;
  std::optional<double> price;  // per GPU-hour
  std::optional<double> cost;   // training: the run; inference: per 1M output tokens
  std::string
      basis;  // where the rate comes from, short: "datasheet × 0.40", "measured GEMM × 0.50"
  std::string why;
  std::vector<std::string> explain;

  // Training: GPU-hours of the run; inference: GPU-hours per million output tokens.
  double gpu_hours(Mode mode) const;
};

struct Advice {
  Request request;  // with the defaults filled in
  std::vector<Candidate> ranked;
  RankBy ranked_by = RankBy::kTime;
  std::string currency;  // empty without prices
  std::string prices_name;
  std::vector<std::string> prices_description;
  std::vector<std::string> model_lines;  // the workload's arithmetic
  std::vector<std::string> assumptions;  // one line each, with sources
  std::vector<std::string> notes;        // run files: what was used, what was not
  std::string naive_pick;                // "" when the rule picks nothing
  std::string naive_line;
};

// UsageError for inconsistent requests (a CNN in inference mode, a deadline in
// inference mode, a candidate not in the catalogue, a fixed --tp that does not
// divide the heads ...).
Advice advise(Request request, const Catalogue& catalogue, const Measurements& measured,
              const Prices* prices);

}  // namespace gpuvs::advise
