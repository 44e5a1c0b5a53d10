// ResNet-50 v1.5 (torchvision's layout and names: the stride sits on the 3x3 conv of
// each bottleneck), 224x224 inputs, 1000 classes, NHWC activations.
//
// Per layer: cuDNN convolution -> fused BN (batch statistics in training) [+
// residual add] [+ ReLU]; stem max pool 3x3/2; head global average pool -> fc
// (cuBLASLt) -> bias + softmax cross-entropy. Backward: fused BN/ReLU/add backward,
// cuDNN backward data and filter, SGD with momentum over one flat array.
//
// Memory: every activation a layer saves for backward has its own buffer (conv
// output x and BN output y); gradients of activations rotate through four scratch
// buffers of the largest activation size. The input has 3 channels stored as 4
// (zeros beyond 3) so that NHWC tensor-core convolutions apply; 8 where cuDNN's
// heuristics list no algorithm for 4 channels in some direction.
//
// Recipe: lr = 0.1 * images per optimizer step / 256, momentum 0.9, weight decay
// 1e-4 on conv and fc weights only (not on BN parameters or the fc bias).
// forward() is inference (BN with running stats); forward_backward() trains (batch
// statistics, running stats updated with momentum 0.1).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gpu/device.h"
#include "measure/region_timer.h"
#include "models/layers/batch_norm.h"
#include "models/layers/conv2d.h"
#include "models/layers/cudnn.h"
#include "models/layers/fully_connected.h"
#include "models/layers/sgd.h"
#include "models/model.h"
#include "models/resnet50/params.h"

namespace gpuvs::models::resnet50 {

constexpr int kImage = 224;
constexpr int kClasses = 1000;
constexpr int kInputChannelChoices[2] = {4, 8};  // stored input channels, first that works
constexpr float kBaseLr = 0.1f;                  // for 256 images per step
constexpr float kMomentum = 0.9f;
// Above this batch the convolution algorithms are cuDNN's heuristic order among its
// deterministic algorithms, untimed. Measured on an H200 (bf16 training): timing every
// algorithm (cudnnFind) took about 90 s at batch 2584; timing only the first 4
// heuristic candidates took 93 s at 1024 and 228 s at 2576, whose steps then ran 7 s
// (361 img/s); cuDNN's first heuristic choice, untimed, ran 6-7 s steps from 2176 up;
// its first deterministic choice ran 8208 img/s at 2048 (8198 at 1024, where the
// timed candidates gave 8225) and builds in about a second. `gpuvs run`'s batch 256
// keeps the full search.
constexpr int kFullSearchMaxBatch = 512;
constexpr float kWeightDecay = 1e-4f;

// One convolution and the BN (+ReLU) after it, with the activations it keeps.
struct ConvBn {
  std::string conv_name, bn_name;                  // "layer1.0.conv1", "layer1.0.bn1"
  std::string fwd_conv, fwd_bn, bwd_conv, bwd_bn;  // timer names
  std::unique_ptr<Conv2d> conv;
  size_t w_entry = 0, bn_entry = 0;  // ParamLayout indices (bias = bn_entry + 1)
  int64_t w_off = 0, gamma_off = 0, beta_off = 0, run_off = 0;
  int64_t save_off = 0;  // into saved_: mean, invstd, scale, shift (4, C)
  BnShape bn;
  bool relu = true;
  bool residual = false;  // a residual is added before the ReLU (bn3)
  DeviceBuffer x;         // (N, P, Q, K) conv output
  DeviceBuffer y;         // (N, P, Q, K) BN [+ residual] [+ ReLU] output
};

struct Bottleneck {
  ConvBn c1, c2, c3;
  std::optional<ConvBn> down;   // downsample.0 (1x1 conv) and downsample.1 (BN, no ReLU)
  const void* input = nullptr;  // (N, H, W, Cin) the previous block's output
};

class ResNet50 final : public Model {
 public:
  ResNet50(const ModelConfig& config, int device);
  ~ResNet50() override;

  const ModelConfig& config() const override { return config_; }
  cudaStream_t stream() const override { return stream_.get(); }
  int64_t items_per_micro_step() const override { return config_.batch; }
  std::string items_unit() const override { return "img/s"; }
  double flops_per_micro_step() const override { return flops_; }
  int64_t parameter_count() const override { return layout_.real_count(); }

  void generate_input(uint64_t seed) override;
  void forward() override;
  void forward_backward(bool accumulate) override;
  void optimizer_step(int micro_steps) override;
  double loss() override;

  std::vector<std::string> parameter_names() const override;
  void set_tensor(const std::string& name, const HostTensor& tensor) override;
  HostTensor get_tensor(const std::string& name) override;

  // Internal buffers as fp32, for diagnosing the backward in dev/resnet50/check.cpp:
  // "dlogits" (N, 1000), "pooled" and "dpooled" (N, 2048), "act/<conv name>.x" and
  // ".y" (N*P*Q, K) NHWC, "saved/<conv name>" (4, K): batch mean, invstd, scale, shift.
  HostTensor debug_tensor(const std::string& name);

  void enable_layer_timing(bool on) override { timer_.enable(on); }
  std::vector<std::pair<std::string, double>> layer_times() override { return timer_.totals(); }
  std::string algorithm_search() const override;

 private:
  // Algorithms timed at construction (cudnnFind*): autotuning asked for and not
  // deterministic mode, whose choice must not depend on a timing.
  bool timed_search() const {
    return config_.autotune && !config_.deterministic && n_ <= kFullSearchMaxBatch;
  }
  // Untimed above kFullSearchMaxBatch: cuDNN's heuristic order, deterministic
  // algorithms only (see kFullSearchMaxBatch), with or without autotuning asked for.
  bool deterministic_algorithms() const {
    return config_.deterministic || n_ > kFullSearchMaxBatch;
  }
  int probe_input_channels();
  void build_layers();
  ConvBn make_conv_bn(const std::string& conv_name, const std::string& bn_name, int in_c, int h,
                      int w, int out_c, int r, int stride, int pad, bool relu, int c_stored);
  void allocate();
  void select_algorithms();
  void upload_initial_state();

  // Step pieces (resnet50_steps.cpp).
  void run_forward(bool train);
  void conv_bn_forward(ConvBn& l, const void* in, const void* residual, bool train);
  void conv_bn_backward_bn(ConvBn& l, void* dy, void* g_out, bool accumulate);
  void run_backward(bool accumulate);
  const ConvBn* find_layer(const std::string& conv_name) const;
  void* param(int64_t off) const;  // working-copy pointer
  void* grad(int64_t off) const;
  float* master(int64_t off) const { return master_.as<float>() + off; }
  void* ws() const { return workspace_.get(); }
  size_t ws_bytes() const { return workspace_.bytes(); }

  ModelConfig config_;
  DType dtype_;
  bool train_;
  int n_;
  int in_c_ = 4;  // stored input channels (3 real, zeros beyond)
  double flops_ = 0;

  Stream stream_;
  CudnnHandle cudnn_;
  ParamLayout layout_;
  RegionTimer timer_;

  ConvBn stem_;
  std::vector<Bottleneck> blocks_;
  std::unique_ptr<FullyConnected> fc_;
  size_t fc_entry_ = 0;

  // Flat arrays (ParamLayout): FP32 master, working copy (16-bit only; else the
  // master is the working copy), gradients (storage type), momentum (FP32).
  DeviceBuffer master_, model_copy_, grads_, momentum_;
  DeviceBuffer running_;     // (buffer_total) running mean/var per BN
  DeviceBuffer saved_;       // (buffer_total) batch mean/invstd per BN
  DeviceBuffer bn_scratch_;  // coef (3, Cmax)
  DeviceBuffer partials_;    // BN partial sums, the largest layer's need

  DeviceBuffer input_;               // (N, 224, 224, in_c_)
  DeviceBuffer labels_;              // (N) int32
  DeviceBuffer pool_out_;            // (N, 56, 56, 64) max pool output
  DeviceBuffer argmax_;              // (N, 56, 56, 64) uint8, training only
  DeviceBuffer pooled_;              // (N, 2048) average pool output
  DeviceBuffer logits_;              // (N, 1000) fp32
  DeviceBuffer row_loss_;            // (N) fp32
  DeviceBuffer loss_;                // (1) fp32
  DeviceBuffer dlogits_;             // (N, 1000) storage type
  DeviceBuffer dpooled_;             // (N, 2048) storage type
  DeviceBuffer scaler_;              // LossScaleState (fp16)
  std::vector<DeviceBuffer> dgrad_;  // 4 x (N, 112, 112, 64) activation gradients
  DeviceBuffer workspace_;           // cuDNN and cuBLASLt, shared
  int64_t scratch_elems_ = 0;        // elements of one dgrad_ buffer
};

}  // namespace gpuvs::models::resnet50
