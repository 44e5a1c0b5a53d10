// Runs a model as `gpuvs model` and `gpuvs run` measure it: one step of training or
// inference, replayed as a CUDA graph, timed by the harness, and turned into the
// results of docs/models.md (throughput, step time, memory, energy, clocks).
//
// A step: inference = forward(); training = `accumulate` x forward_backward(k > 0)
// then optimizer_step(accumulate). Work goes on model.stream() only and never
// synchronises, so a whole step is captured in one CUDA graph.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/run_file.h"
#include "gpu/device.h"
#include "models/batch_search.h"
#include "models/model.h"
#include "models/run_options.h"

#include "suite/context.h"
#include "suite/produces.h"

namespace gpuvs::models {

// Enqueues one step of the model's configured kind on model.stream().
void enqueue_step(Model& model);

// Replays steps: eagerly, or as one CUDA graph captured from a step at construction.
// The capture does not run the step; the first launch() does.
class StepRunner {
 public:
  StepRunner(Model& model, bool graph);
  void launch() const;  // one step, enqueued on model.stream()
  bool graphed() const { return graph_ != nullptr; }
  size_t graph_nodes() const { return graph_ ? graph_->nodes() : 0; }

 private:
  Model& model_;
  std::unique_ptr<GraphExec> graph_;
};

// make_model, with a GPU that cannot run the combination asked for (fp8 below
// compute capability 8.9) reported as a usage error (exit 2): the request, not the GPU,
// is at fault.
std::unique_ptr<Model> build_model(const ModelConfig& config, int device);

// Device memory in use on the current device (cudaMemGetInfo total - free), bytes.
double device_used_bytes();

// "ResNet-50", "BERT-large"; the config's name where unknown.
std::string model_display_name(const std::string& model);

// The id of a result of a configuration, from the table (suite/produces.h):
// (kModelRate, resnet50 train bf16) is "model.resnet50.train.bf16"; `layer` fills the
// per-layer id of kModelLayer ("fwd.conv1").
std::string model_result_id(Family family, const ModelConfig& config, std::string_view layer = {});

// Builds the model and runs one full step: one candidate of the batch search. Out of
// memory (constructor or step) is a FitProbe that does not fit; everything the
// candidate took is freed before it returns. Other errors throw.
FitProbe try_fit(const ModelConfig& config, int device);

// The largest batch of `config` (its batch ignored) on `device`, and the recommended
// batch with `headroom`. Candidates are built without cuDNN autotuning.
BatchSearchResult find_max_batch(const ModelConfig& config, int device, double headroom,
                                 const std::function<void(const std::string&)>& progress);

// What the search found, carried into the results' parameters.
struct SearchFacts {
  BatchSearchResult search;
  double headroom = 0;
  double seconds = 0;  // wall time of the search
};

// Measures one configuration on ctx.device: the results of docs/models.md. A batch
// that does not fit throws OutOfMemoryError naming the batch and the memory.
std::vector<Result> measure_model(const ModelRunOptions& run, BenchContext& ctx,
                                  const SearchFacts* search = nullptr);

// `gpuvs model`: the search first with --batch max, then measure_model.
std::vector<Result> run_configured(const ModelRunOptions& run, BenchContext& ctx);

}  // namespace gpuvs::models

namespace gpuvs {

// The benchmark "model.end_to_end": `gpuvs model`'s one configuration
// (BenchContext::model), or `gpuvs run`'s quick table of models.
std::vector<Result> run_model(BenchContext& ctx);

}  // namespace gpuvs
