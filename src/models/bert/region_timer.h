// GPU time per named region of BERT's steps, for Model::layer_times(): mark(name)
// records a CUDA event that ends the open region and starts `name`; stop() ends it.
// Times of regions with the same name add up (over layers and steps). Disabled, a
// mark costs one branch; enabled, it records events, so a step is then not captured
// in a CUDA graph (the trainer runs timing mode without graphs).
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gpu/device.h"

namespace gpuvs::models::bert {

class RegionTimer {
 public:
  void enable(bool on);
  bool enabled() const { return enabled_; }
  void mark(const char* name, cudaStream_t s);  // name: a string literal
  void stop(cudaStream_t s);
  // (name, seconds) in first-seen order; synchronises with the recorded events.
  std::vector<std::pair<std::string, double>> totals();

 private:
  struct Mark {
    const char* name;  // null: the end of a step
    std::unique_ptr<Event> event;
  };
  void fold();
  bool enabled_ = false;
  std::vector<Mark> marks_;
  std::vector<std::pair<std::string, double>> totals_;
};

}  // namespace gpuvs::models::bert
