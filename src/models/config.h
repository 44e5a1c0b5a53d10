// What a model run is asked to do: model, mode, precision, batch, accumulation,
// CUDA graph. Plain C++ (no CUDA) so the CLI's parsing and the batch search are
// tested on machines without a GPU. Shared by ResNet-50 and BERT-large.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuvs::models {

enum class Mode { kTrain, kInfer };

// fp32: FP32 math everywhere (TF32 off). tf32: FP32 storage, TF32 tensor-core math.
// fp16 / bf16: 16-bit activations and weights for the math, FP32 master weights and
// accumulation; fp16 uses dynamic loss scaling. fp8: E4M3 forward / E5M2 gradient
// GEMMs with delayed scaling (BERT-large, Llama training; compute capability >= 8.9).
enum class Precision { kFp32, kTf32, kFp16, kBf16, kFp8 };

enum class Attention { kUnfused, kFused };

// The Llama training's fused causal attention: cuDNN's SDPA engines (through the graph
// API, models/layers/cudnn_sdpa.h), gpuvs's own FlashAttention-2-style kernels, or auto:
// cuDNN's where it has an engine for the shape and the run need not be deterministic
// (its backward adds dq through atomics), else gpuvs's. Measured on an H200 (Llama 3.2
// 1B's shape), cuDNN's forward and backward are the faster (docs/models.md).
enum class AttentionKernel { kAuto, kCudnn, kGpuvs };

// What a training step keeps of each layer's forward for its backward (Llama): every
// activation (none recomputed); selective: all but the cheap elementwise outputs
// (the two RMSNorm outputs and SwiGLU's), recomputed in the backward; full: only the
// layer's input, the whole layer's forward recomputed in the backward (Megatron-LM's
// --recompute-granularity full). FLOPs and MFU count the model's work only, as the
// published MFU figures do: recomputation lowers them.
enum class Recompute { kNone, kSelective, kFull };

std::string_view to_string(Mode m);
std::string_view to_string(Precision p);
std::optional<Mode> mode_from_string(std::string_view s);
std::optional<Precision> precision_from_string(std::string_view s);
std::string_view to_string(Attention a);
std::optional<Attention> attention_from_string(std::string_view s);
std::string_view to_string(AttentionKernel k);
std::optional<AttentionKernel> attention_kernel_from_string(std::string_view s);
std::string_view to_string(Recompute r);
std::optional<Recompute> recompute_from_string(std::string_view s);

// Why precision fp8 cannot run on a GPU of compute capability major.minor (FP8 tensor
// cores came with 8.9: Ada, Hopper, Blackwell), or nullopt where it can. BERT-large
// throws it as a UsageError (exit 2).
std::optional<std::string> fp8_refusal(int major, int minor);

struct ModelConfig {
  std::string model = "resnet50";  // "resnet50" | "bert-large"
  Mode mode = Mode::kTrain;
  Precision precision = Precision::kBf16;
  int batch = 256;     // per micro-step
  int accumulate = 1;  // micro-steps per optimizer step (train only)
  bool graph = true;   // capture the whole step in a CUDA graph
  int seq = 128;       // BERT sequence length (128 or 512); ignored by ResNet-50
  uint64_t seed = 1;   // weights and synthetic data
  // true: time every algorithm at construction (cudnnFind*, like
  // torch.backends.cudnn.benchmark). false: take the library's heuristic choice
  // (cudnnGet*_v7) without timing: the candidates of the largest-batch search use it
  // so that the search stays fast; their memory may differ by the workspace.
  bool autotune = true;
  // true: the same bits on every run of the same build, GPU and batch. Convolution
  // algorithms are taken from cuDNN's heuristic order (untimed, so every model picks
  // the same ones) and only deterministic ones (no atomics in the weight gradients).
  // Slower where the fastest algorithm is not deterministic. BERT is deterministic
  // either way (its weight-gradient GEMMs and kernels add in a fixed order).
  bool deterministic = false;
  // BERT's attention: unfused (scores, softmax and context as separate kernels, the
  // (B, H, T, T) probabilities in memory; the default) or fused (flash-style, one
  // kernel per pass). Ignored by ResNet-50.
  Attention attention = Attention::kUnfused;
  // Llama ("llama"): the published size ("1b", "3b", "8b"), and for inference the
  // prompt's tokens and the tokens generated after it (the first by the prefill).
  std::string llama_size = "1b";
  Recompute recompute = Recompute::kNone;                     // Llama training only
  AttentionKernel attention_kernel = AttentionKernel::kAuto;  // Llama training only
  int prompt = 128;
  int generate = 128;
  // Llama inference: the KV cache in FP8 E4M3 (false: in the activations' type).
  bool kv_cache_fp8 = false;
};

// A tensor on the host in PyTorch's layout and naming, for correctness checks
// against PyTorch. Integer tensors (labels, token ids) hold exact integers.
struct HostTensor {
  std::vector<int64_t> shape;
  std::vector<float> data;  // row-major

  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return n;
  }
};

}  // namespace gpuvs::models
