// Per-layer GPU time from CUDA events around each named region of a step, summed
// over the steps run while enabled. For the breakdown printed when a throughput
// target is missed; the trainer runs timing mode without CUDA graphs (events in a
// graph would time nothing useful). Disabled, a Scope costs one branch.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gpu/device.h"

namespace gpuvs::models {

class LayerTimer {
 public:
  void enable(bool on);
  bool enabled() const { return enabled_; }
  // (name, seconds) in first-seen order; synchronises with the recorded events.
  std::vector<std::pair<std::string, double>> totals();

  class Scope {
   public:
    Scope(LayerTimer& t, const std::string& name, cudaStream_t s);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    LayerTimer* timer_ = nullptr;  // null when disabled
    cudaStream_t stream_ = nullptr;
  };

 private:
  struct Pending {
    size_t slot;
    std::unique_ptr<Event> start, end;
  };
  std::unique_ptr<Event> take_event();
  void fold();
  size_t slot_of(const std::string& name);

  bool enabled_ = false;
  std::vector<std::pair<std::string, double>> totals_;
  std::vector<Pending> pending_;
  std::vector<std::unique_ptr<Event>> free_;
};

}  // namespace gpuvs::models
