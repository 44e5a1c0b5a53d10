// Where every ResNet-50 parameter lives in the flat arrays (FP32 master, working
// copy, gradients, momentum) and how it maps to PyTorch's name and layout.
//
// Layout: tensors with weight decay first (conv weights as KRSC, fc.weight as
// (1000, 2048) like PyTorch), then those without (BN weight and bias, fc.bias), each
// starting on a multiple of kAlign elements; the gaps are zero and stay zero. So one
// SGD kernel covers everything with a single decay boundary. BN running statistics
// are buffers, not parameters: a separate FP32 array (mean then var per layer).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/config.h"

namespace gpuvs::models::resnet50 {

constexpr int64_t kAlign = 64;  // elements: 256 bytes of fp32, 128 of 16-bit

enum class ParamKind { kConv, kFcWeight, kBnWeight, kBnBias, kFcBias };

struct ParamEntry {
  std::string name;  // state_dict name
  ParamKind kind = ParamKind::kConv;
  std::vector<int64_t> torch_shape;  // PyTorch shape (OIHW for convs)
  int64_t offset = 0;                // into the flat arrays
  int64_t count = 0;                 // elements stored (conv1: input channels padded)
  int k = 0, c = 0, r = 0;           // convs: outputs, real inputs, window
  int c_stored = 0;                  // convs: stored input channels
  bool decay = false;
};

struct BufferEntry {
  std::string prefix;  // "layer1.0.bn1": running_mean at offset, running_var at offset + c
  int c = 0;
  int64_t offset = 0;
};

class ParamLayout {
 public:
  // Adds "<name>.weight"; returns the index of the new entry. Offsets are valid
  // after finish().
  size_t add_conv(const std::string& name, int k, int c, int r, int c_stored);
  // Adds "<prefix>.weight" and "<prefix>.bias" and the running stats; returns the
  // index of the weight (the bias is the next entry).
  size_t add_bn(const std::string& prefix, int c);
  size_t add_fc(const std::string& prefix, int out, int in);
  void finish();

  const std::vector<ParamEntry>& entries() const { return entries_; }
  const std::vector<BufferEntry>& buffers() const { return buffers_; }
  const ParamEntry& at(size_t i) const { return entries_[i]; }
  const ParamEntry* find(const std::string& name) const;
  const BufferEntry* find_buffer(const std::string& prefix) const;
  int64_t total() const { return total_; }          // flat parameter elements (padded)
  int64_t decay_end() const { return decay_end_; }  // elements [0, decay_end) decay
  int64_t buffer_total() const { return buffer_total_; }
  int64_t real_count() const;  // parameters as PyTorch counts them

  // PyTorch layout (fp32) <-> stored layout (fp32), for one entry.
  std::vector<float> to_stored(const ParamEntry& e, const HostTensor& t) const;
  HostTensor from_stored(const ParamEntry& e, const std::vector<float>& stored) const;

  // torchvision's initialisation from `seed`: conv kaiming normal (fan_out, relu),
  // BN weight 1 bias 0, fc uniform(+-1/sqrt(in)); running mean 0, var 1. Stored
  // layout, deterministic.
  std::vector<float> init_params(uint64_t seed) const;
  std::vector<float> init_buffers() const;

 private:
  std::vector<ParamEntry> entries_;
  std::vector<BufferEntry> buffers_;
  int64_t total_ = 0, decay_end_ = 0, buffer_total_ = 0;
};

}  // namespace gpuvs::models::resnet50
