// How fast: the rate a GPU is assumed to deliver (from the user's run files when
// they measured it, else the datasheet), the communication of data and tensor
// parallelism, and from them training time and inference speed. Reads run files
// and the catalogue only (docs/design.md), never a live GPU.
//
// Invariants: a measured figure is only taken from a result with status ok; a
// figure the catalogue lacks gives no rate (nullopt with the reason), never 0.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "advise/memory.h"
#include "advise/model.h"
#include "core/run_file.h"
#include "specs/catalogue.h"

namespace gpuvs::advise {

// Best BF16 matmul an H100 SXM reaches, as a share of its datasheet peak: 794.5 of
// 989 TFLOP/s (Bekman, "Maximum Achievable Matmul FLOPS comparison table", ml-engineering).
// A measured GEMM peak G stands for datasheet × this share, so MFU m of the datasheet
// becomes m / 0.803 of G: a GPU that measures as expected keeps its estimate.
inline constexpr double kMamfReference = 794.5 / 989.0;
// Copy bandwidth as a share of the datasheet: gpuvs's own H200 run of 2026-11-30
// (tests/data/runs/h200-run-2026-11-30.json, memory.hbm.copy 4.281 of 4.8 TB/s; the
// run bundled since then measured 4.242). Decode at bw_util of the datasheet is
// bw_util / 0.892 of a measured copy; an H200 that copies at that rate therefore
// leaves its decode estimate where the datasheet puts it.
inline constexpr double kCopyReference = 4.2811e12 / 4.8e12;

struct Assumptions {
  double mfu = 0.40;                // of the datasheet dense peak, on the FLOPs executed
  double bw_util = 0.80;            // of the datasheet memory bandwidth, decode
  double network_bandwidth = 50e9;  // B/s per GPU between nodes (400 Gb/s InfiniBand NDR)
  int gpus_per_node = 8;            // NVLink domain of an HGX/DGX board
};

// What the user's run files measured for one catalogue GPU (median over the GPUs
// of that type in the files).
struct MeasuredGpu {
  std::string gpu_id;
  std::map<std::string, double> gemm;            // "bf16", "fp8_e4m3", ... → FLOP/s
  std::map<std::string, std::string> gemm_from;  // same keys → result id and file
  std::optional<double> copy_bandwidth;          // memory.hbm.copy, B/s
  std::string copy_from;
  std::optional<double> all_reduce_busbw;  // collective.all_reduce*, B/s (bus bandwidth)
  std::string all_reduce_from;
  std::optional<double> resnet50_train;  // model.resnet50.train*, img/s per GPU
  std::string resnet50_from;
  // model.llama-*.infer.*.decode.bandwidth_share at batch 1, of the largest model
  // measured: the share of the copy bandwidth a decode step reached.
  std::optional<double> decode_share;
  std::string decode_share_from;
};

class Measurements {
 public:
  // Every GPU of the run matched to the catalogue (PCI id, then driver name); GPUs
  // without a match are listed in notes(), not guessed.
  void add_run(const RunFile& run, const std::string& file, const Catalogue& catalogue);
  const MeasuredGpu* find(const std::string& gpu_id) const;
  bool empty() const { return samples_.empty(); }
  const std::vector<std::string>& notes() const { return notes_; }

 private:
  struct Samples {
    std::map<std::string, std::vector<double>> values;  // key → per-GPU values
    std::map<std::string, std::string> from;
    std::map<std::string, int64_t> rank;  // key → the rank its samples have
  };
  std::map<std::string, Samples> samples_;  // gpu id → samples
  std::map<std::string, MeasuredGpu> medians_;
  std::vector<std::string> notes_;
};

// The run-file GEMM of a precision: compute.gemm.<key>[.best] ("bf16", "fp8_e4m3").
std::string gemm_key(Precision p);

// The catalogue metric of a precision's dense tensor (or CUDA-core) peak.
std::string compute_metric(Precision p);

struct ComputeRate {
  double peak = 0;                      // FLOP/s (OP/s for int8): datasheet or measured GEMM
  double utilization = 0;               // share of `peak` assumed delivered
  std::optional<double> samples_per_s;  // CNN: a measured or published img/s per GPU
  std::string basis;                    // "measured", "datasheet", "published"
  std::string text;                     // the line --explain shows
  double rate() const { return peak * utilization; }
};

// nullopt with `why_not` set when the GPU has no figure for the precision.
std::optional<ComputeRate> compute_rate(const GpuSpec& gpu, Precision p,
                                        const MeasuredGpu* measured, double mfu,
                                        std::string& why_not);

// ResNet-50 training throughput per GPU: a run file's model.resnet50.train, else a
// published figure at the precision asked; nullopt when neither exists.
std::optional<ComputeRate> resnet50_rate(const GpuSpec& gpu, Precision p,
                                         const MeasuredGpu* measured);

struct Bandwidth {
  double value = 0;  // B/s assumed delivered
  std::string basis;
  std::string text;
  double factor = 0;  // value / the bandwidth it starts from (copy or datasheet)
};

// Decode: measured copy × a measured decode share where the run files have one, else
// measured copy × bw_util / kCopyReference, else datasheet × bw_util.
std::optional<Bandwidth> memory_bandwidth(const GpuSpec& gpu, const MeasuredGpu* measured,
                                          double bw_util, std::string& why_not);

// Collective bus bandwidth (nccl-tests convention: an all-reduce of S bytes over n
// GPUs takes 2·(n−1)/n·S / busbw) inside a node: a measured all-reduce, else half
// the datasheet NVLink total (one direction), else half the PCIe total.
Bandwidth node_bandwidth(const GpuSpec& gpu, const MeasuredGpu* measured);

struct TrainingJob {
  double model_flops = 0;    // training_flops(): 6·N·T + attention, or 3·forward·samples
  double samples = 0;        // sequences (tokens / s) or images
  int64_t global_batch = 0;  // samples per optimizer step
};

struct TrainingTime {
  double executed_flops = 0;  // model FLOPs plus recomputation
  double steps = 0;
  double compute_s = 0;
  double dp_comm_s = 0;  // all of it; only what exceeds the backward pass is added
  double dp_exposed_s = 0;
  double tp_comm_s = 0;
  double total_s = 0;
  std::vector<std::string> lines;  // the arithmetic
};

TrainingTime training_time(const Model& m, const TrainingSetup& setup, const Layout& layout,
                           const TrainingJob& job, const ComputeRate& rate, const Bandwidth& node,
                           const Assumptions& a);

struct InferenceSpeed {
  double decode_step_s = 0;
  double tokens_per_s = 0;  // all sequences of the batch together
  double prefill_s = 0;     // one batch of full-context prompts
  bool memory_bound = true;
  std::vector<std::string> lines;
};

InferenceSpeed inference_speed(const Model& m, const InferenceSetup& setup, int count,
                               const ComputeRate& rate, const Bandwidth& bandwidth);

// "3.2 h", "12.5 days", "41 s": seconds for people.
std::string format_duration(double seconds);

}  // namespace gpuvs::advise
