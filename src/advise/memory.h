// Memory per GPU of training and inference, term by term, each with the formula it
// comes from (docs/advise.md lists the sources):
//  - model states: ZeRO (Rajbhandari et al. 2020): mixed-precision Adam keeps 2 + 2 +
//    12 bytes per parameter (fp16/bf16 weights and gradients; fp32 master weights,
//    momentum and variance); ZeRO-1/2/3 divide optimizer / + gradients / + weights by
//    the data-parallel degree;
//  - transformer activations: Korthikanti et al. 2022 ("Reducing Activation
//    Recomputation in Large Transformer Models"), per layer s·b·h·(34 + 5·a·s/h)
//    bytes, divided by the tensor-parallel degree t with sequence parallelism; full
//    recomputation keeps only each layer's input, 2·s·b·h;
//  - KV cache: 2 (K and V) · layers · kv_heads · head_dim · bytes · context · batch.
// All figures are bytes (decimal when shown: GB = 1e9 B).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "advise/model.h"

namespace gpuvs::advise {

enum class Precision { kFp32, kTf32, kFp16, kBf16, kFp8, kInt8, kInt4 };
enum class Optimizer { kAdam, kSgd };                   // SGD with momentum
enum class Sharding { kNone, kZero1, kZero2, kZero3 };  // FSDP (full shard) = ZeRO-3
enum class Recompute { kNone, kSelective, kFull };

// Parsers: one-line UsageError naming the option and the accepted values.
Precision parse_precision(std::string_view text, bool training);
Optimizer parse_optimizer(std::string_view text);
Sharding parse_sharding(std::string_view text);
Recompute parse_recompute(std::string_view text);

std::string_view to_string(Precision p);
std::string_view to_string(Optimizer o);
std::string_view to_string(Sharding s);
std::string_view to_string(Recompute r);

// Bytes of one weight as stored for inference (int4: 0.5).
double weight_bytes(Precision p);

struct BytesPerParam {
  double weights = 0;
  double gradients = 0;
  double optimizer = 0;
  double total() const { return weights + gradients + optimizer; }
};

// Training: mixed precision (fp16, bf16, fp8 compute) keeps 16-bit weights and
// gradients plus an fp32 master copy in the optimizer: Adam 2 + 2 + 12, SGD with
// momentum 2 + 2 + 8. fp32/tf32 keep fp32 weights and gradients and no master
// copy: Adam 4 + 4 + 8, SGD 4 + 4 + 4.
BytesPerParam training_bytes_per_param(Precision p, Optimizer o);

// Korthikanti et al. 2022, bytes of one transformer layer's stored activations for
// micro-batch b: none: s·b·h·(34 + 5·a·s/h) / t (FlashAttention keeps no s×s
// scores: the 5·a·s/h term drops); selective: s·b·h·34 / t; full: 2·s·b·h / t.
// t > 1 assumes sequence parallelism (Megatron-LM's setting with tensor parallelism).
struct ActivationInput {
  int64_t seq = 0;          // s
  int64_t micro_batch = 0;  // b
  int64_t hidden = 0;       // h
  int heads = 0;            // a
  int tp = 1;               // t
  bool flash_attention = false;
  Recompute recompute = Recompute::kNone;
};
double activation_bytes_per_layer(const ActivationInput& in);

// 2 · layers · kv_heads · head_dim · bytes · context · batch.
double kv_cache_bytes(int layers, int kv_heads, int64_t head_dim, double bytes_per_value,
                      int64_t context, int64_t batch);

// Framework memory beyond the formulas: a fixed part (CUDA context, cuBLAS/cuDNN
// workspaces, NCCL buffers) and a fraction of the rest (allocator fragmentation,
// temporary buffers).
struct Overhead {
  double fixed_bytes = 2e9;
  double fraction = 0.10;
};

struct Layout {
  int tp = 1;  // tensor-parallel degree, within one node
  int dp = 1;  // data-parallel degree
  int count() const { return tp * dp; }
};

struct TrainingSetup {
  Precision precision = Precision::kBf16;
  Optimizer optimizer = Optimizer::kAdam;
  Sharding sharding = Sharding::kZero1;
  Recompute recompute = Recompute::kNone;
  bool flash_attention = true;
  int64_t micro_batch = 1;  // sequences (transformer) or samples (CNN) per GPU per pass
  Overhead overhead;
};

struct MemoryBreakdown {
  double weights = 0;
  double gradients = 0;
  double optimizer = 0;
  double activations = 0;  // training: stored activations; inference: KV cache
  double buffers = 0;      // ZeRO-3 gathered layers; the loss's logits
  double overhead = 0;
  double total() const {
    return weights + gradients + optimizer + activations + buffers + overhead;
  }
  std::vector<std::string> steps;  // the arithmetic, one line each
};

// `with_steps` false skips the text (the count search evaluates many layouts).
MemoryBreakdown training_memory(const Model& m, const TrainingSetup& setup, const Layout& layout,
                                bool with_steps = true);

struct InferenceSetup {
  Precision precision = Precision::kBf16;     // weights
  Precision kv_precision = Precision::kBf16;  // KV cache values
  int64_t context = 0;                        // tokens per sequence (prompt + output)
  int64_t batch = 1;                          // sequences served at once
  Overhead overhead;
};

// Weights and KV cache split evenly over `count` GPUs (tensor parallel in a node,
// pipeline stages beyond it).
MemoryBreakdown inference_memory(const Model& m, const InferenceSetup& setup, int count,
                                 bool with_steps = true);

// "141 GB", "16.8 GB", "512 MB": decimal, three significant digits.
std::string format_gb(double bytes);

}  // namespace gpuvs::advise
