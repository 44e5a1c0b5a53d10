// The contract between a model (ResNet-50, BERT-large) and what runs it: the
// trainer (timing, CUDA graphs, accumulation), the largest-batch search and the
// correctness tests against PyTorch.
//
// Invariants every model keeps:
//  - all device memory is allocated in the constructor (weights, gradients,
//    optimizer state, activations, workspaces); the step functions never allocate,
//    never synchronise with the host and only use stream(), so a whole step can be
//    captured in a CUDA graph;
//  - the constructor throws gpuvs::OutOfMemoryError (core/error.h) when the GPU has
//    not enough memory (cudaMalloc, cuDNN or cuBLASLt workspace), after freeing what
//    it took, so the caller can retry with a smaller batch;
//  - fp16 loss scaling (overflow check, skipped update, scale change) happens on the
//    GPU inside optimizer_step();
//  - the same config and seed give the same weights and inputs.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "models/config.h"

namespace gpuvs::models {

class Model {
 public:
  virtual ~Model() = default;
  Model() = default;
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  virtual const ModelConfig& config() const = 0;
  virtual cudaStream_t stream() const = 0;

  // Items one micro-step processes (images or sequences) and their unit.
  virtual int64_t items_per_micro_step() const = 0;  // = config().batch
  virtual std::string items_unit() const = 0;        // "img/s" | "seq/s"
  // Tokens per item for sequence models (the sequence length), 0 otherwise: a run
  // then also reports tokens/s.
  virtual int64_t tokens_per_item() const { return 0; }
  // FLOPs of one micro-step (forward, plus backward when training): for TFLOP/s.
  virtual double flops_per_micro_step() const = 0;
  virtual int64_t parameter_count() const = 0;

  // Fill the input batch with synthetic data generated on the GPU from `seed`.
  virtual void generate_input(uint64_t seed) = 0;

  // Inference: forward pass over the current input (no gradients).
  virtual void forward() = 0;
  // Training micro-step: forward, loss, backward. accumulate=false overwrites the
  // gradients, true adds to them (gradient accumulation over micro-steps).
  virtual void forward_backward(bool accumulate) = 0;
  // Optimizer update from the gradients of `micro_steps` micro-steps (they are
  // averaged), then the gradients are stale until the next forward_backward(false).
  virtual void optimizer_step(int micro_steps) = 0;

  // Mean loss of the last micro-step. Synchronises the stream: not for timed code.
  virtual double loss() = 0;

  // Correctness checks against PyTorch (tests only; may synchronise and allocate).
  // Names follow the PyTorch module's state_dict ("layer1.0.conv1.weight",
  // "bn1.running_mean"); tensors are fp32 in PyTorch's layout (NCHW, OIHW, ...).
  // set_tensor also accepts the inputs ("input", "labels" for ResNet-50);
  // get_tensor also returns "logits", "loss" and "grad/<parameter name>".
  // "logits" is every model's main output (BERT: an alias of "prediction_logits").
  virtual std::vector<std::string> parameter_names() const = 0;
  virtual void set_tensor(const std::string& name, const HostTensor& tensor) = 0;
  virtual HostTensor get_tensor(const std::string& name) = 0;

  // Per-layer time breakdown, for when a throughput target is missed. While enabled,
  // each layer's work is bracketed by CUDA events (run without CUDA graphs then).
  virtual void enable_layer_timing(bool /*on*/) {}
  // Seconds per named layer ("fwd conv1", "fwd layer1.0.bn1+relu", "bwd layer1.0.conv1",
  // "fwd fc", "loss", "sgd", ...), summed over the steps run since enabled; forward and
  // backward separate. Synchronises. Empty where a model does not time its layers.
  virtual std::vector<std::pair<std::string, double>> layer_times() { return {}; }

  // How the library algorithms were chosen, for the run file's parameters
  // ("algorithm_search"); empty where the model has no such choice to report.
  virtual std::string algorithm_search() const { return {}; }

  // Which kernels ran a fused attention, for the run file's parameters
  // ("attention_kernel"); empty where the model has no such choice.
  virtual std::string attention_kernel() const { return {}; }

  // The main output ("logits") checked on the GPU: how many values it has and how many
  // of them are NaN or infinite, without reading it back; nullopt where the model has
  // no such check (the caller then reads get_tensor("logits")).
  struct OutputCount {
    int64_t values = 0;
    int64_t nonfinite = 0;
  };
  virtual std::optional<OutputCount> count_nonfinite_logits() { return std::nullopt; }
};

// Builds the model named in config.model. Throws UsageError for an unknown model or
// a combination it does not support (exit 2), CannotRunError where the GPU cannot
// run it (fp8 below compute capability 8.9, with the reason; build_model makes that a
// usage error, exit 2), and OutOfMemoryError when it does not fit.
std::unique_ptr<Model> make_model(const ModelConfig& config, int device);

}  // namespace gpuvs::models
