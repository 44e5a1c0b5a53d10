// BERT-large pre-training (transformers' BertForPreTraining): 24 layers, hidden 1024,
// 16 heads, FFN 4096, vocabulary 30522, 512 positions, 2 segment types, LayerNorm
// eps 1e-12, exact (erf) GELU. Loss = masked-LM cross-entropy (mean over the masked
// positions, label -100 ignored, decoder tied to the word embeddings plus an output
// bias) + next-sentence cross-entropy on the pooled [CLS] (dense + tanh, classifier 2).
//
// Per layer: fused QKV GEMM (cuBLASLt, bias epilogue) -> head split -> scores =
// Q K^T / 8 (strided-batched GEMM) -> fused mask + softmax + dropout -> P V ->
// head merge -> output dense -> fused dropout + residual + LayerNorm -> FFN1 (bias
// epilogue) -> GELU (own kernel: BERT's erf form; cuBLASLt's GELU epilogue is not
// documented as erf) -> FFN2 -> dropout + residual + LayerNorm. Attention
// (ModelConfig::attention): unfused by default (batched GEMMs around a fused softmax
// kernel; the probabilities kept for backward, B*H*T*T per layer), or fused
// (flash_attention.cu: bf16/fp16 storage, T % 64 == 0; no probabilities in memory).
//
// Precision: fp32 (TF32 off), tf32, fp16 (dynamic loss scaling on the GPU), bf16:
// activations and the GEMMs' inputs in the storage type, FP32 accumulation, FP32
// master weights, FP32 gradients (weight-gradient GEMMs write FP32, so accumulation
// over micro-steps and the tied embedding's two contributions add in FP32). fp8
// (compute capability >= 8.9, else UsageError): the encoder's four dense layers run
// their GEMMs in FP8 (fp8_linear.h: E4M3 forward, E5M2 gradients, per-tensor delayed
// scaling with a 16-step amax history), everything else as bf16; the scales are
// calibrated by two steps at construction (gradients and step counter reset after).
// A GEMM that cuBLASLt will not run in FP8 runs in bf16 instead (fp8_plan() says so).
//
// Optimizer: AdamW (torch.optim.AdamW: bias-corrected, decoupled decay), constant
// lr 1e-4 (BERT's peak rate; no warm-up or decay schedule: a throughput benchmark),
// betas 0.9 / 0.999, eps 1e-6, weight decay 0.01 on every weight except LayerNorm's
// (none on biases, LayerNorm, cls.predictions.bias), no gradient clipping.
//
// Dropout 0.1 (hidden and attention probabilities) in training, off in forward();
// set_dropout(false) turns it off for training too (the PyTorch comparison).
// Logits cover every position (B, T, V), as BertForPreTraining returns them.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gpu/cublaslt.h"
#include "gpu/device.h"
#include "measure/region_timer.h"
#include "models/bert/encoder_dense.h"
#include "models/bert/fp8.h"
#include "models/bert/fp8_linear.h"
#include "models/bert/gemm.h"
#include "models/bert/kernels.h"
#include "models/bert/params.h"
#include "models/model.h"

namespace gpuvs::models {

// Throws UsageError for fp8 below compute capability 8.9, a sequence length that is
// not a multiple of 32 up to 512, a batch below 1, or fused attention where
// flash_attention_supported() says no (fp32, tf32, T % 64 != 0); OutOfMemoryError
// when it does not fit.
std::unique_ptr<Model> make_bert_large(const ModelConfig& config, int device);

namespace bert {

constexpr float kLr = 1e-4f;
constexpr float kBeta1 = 0.9f, kBeta2 = 0.999f, kAdamEps = 1e-6f, kWeightDecay = 0.01f;
constexpr float kDropout = 0.1f;

// Activations one encoder layer keeps (training: one set per layer; inference: two
// sets used in turn). Shapes: N = B*T rows, C = 1024, F = 4096, H = 16, D = 64.
struct LayerActs {
  DeviceBuffer q, k, v;     // (B, H, T, D) each
  DeviceBuffer probs;       // (B, H, T, T) softmax (unfused attention)
  DeviceBuffer probs_drop;  // (B, H, T, T) after dropout (training, unfused attention)
  DeviceBuffer ctx;         // (N, C) attention context, heads merged
  DeviceBuffer z1;          // (N, C) dropout(attention out) + input (training)
  DeviceBuffer stats1;      // (N, 2) fp32 mean, rstd (training)
  DeviceBuffer a;           // (N, C) LN1 output
  DeviceBuffer h;           // (N, F) FFN1 output (pre-GELU)
  DeviceBuffer g;           // (N, F) GELU(h) (training; inference: in place in h)
  DeviceBuffer z2;          // (N, C) dropout(FFN out) + a (training)
  DeviceBuffer stats2;      // (N, 2) (training)
  DeviceBuffer out;         // (N, C) LN2 output: the next layer's input
};

class BertLarge final : public Model {
 public:
  BertLarge(const ModelConfig& config, int device);
  ~BertLarge() override;

  const ModelConfig& config() const override { return config_; }
  cudaStream_t stream() const override { return stream_.get(); }
  int64_t items_per_micro_step() const override { return config_.batch; }
  std::string items_unit() const override { return "seq/s"; }
  int64_t tokens_per_item() const override { return t_; }
  double flops_per_micro_step() const override { return flops_; }
  int64_t parameter_count() const override { return layout_.real_count(); }

  // ids: [CLS] w ... [SEP] w ... [SEP] with word pieces uniform over the ordinary
  // vocabulary, segment 0 up to the first [SEP] and 1 after, full attention mask;
  // 15 % of the word positions masked (label = the original id; input 80 % [MASK],
  // 10 % a random word, 10 % unchanged), other labels -100; NSP labels uniform in
  // {0, 1}. All a pure function of (seed, position), generated on the GPU.
  void generate_input(uint64_t seed) override;
  void forward() override;
  void forward_backward(bool accumulate) override;
  void optimizer_step(int micro_steps) override;
  double loss() override;

  std::vector<std::string> parameter_names() const override;
  void set_tensor(const std::string& name, const HostTensor& tensor) override;
  HostTensor get_tensor(const std::string& name) override;
  std::optional<OutputCount> count_nonfinite_logits() override;

  // Regions (each summed over the 24 layers): "fwd embeddings", "fwd qkv" (GEMM and
  // head split), the attention core: unfused "fwd attention scores" (Q K^T), "fwd
  // attention softmax", "fwd attention context" (P V and head merge), fused "fwd
  // attention core" (kernel and head merge); "fwd attention out+ln", "fwd ffn1+gelu",
  // "fwd ffn2+ln", "fwd mlm head", "fwd nsp head", "loss", "bwd mlm head", "bwd nsp
  // head", "bwd ffn2+ln", "bwd ffn1+gelu", "bwd attention out+ln", the core: unfused
  // "bwd attention dP+dV" (head split of dC, dP = dC V^T, dV = P^T dC), "bwd attention
  // softmax", "bwd attention dQ+dK" (the two GEMMs and the head merge of dQ, dK, dV),
  // fused "bwd attention core"; "bwd qkv", "bwd embeddings", "adamw". fp8 moves each
  // encoder dense layer's FP8 work into "<dir> <layer> fp8 cast" (casts with amax and
  // transposes) and "<dir> <layer> fp8 gemm" (<layer>: qkv, attention out, ffn1, ffn2),
  // and the weights' cast after AdamW into "adamw fp8 weight cast".
  void enable_layer_timing(bool on) override { timer_.enable(on); }
  std::vector<std::pair<std::string, double>> layer_times() override { return timer_.totals(); }

  // Dropout in training (default on); off for comparisons with PyTorch's eval math.
  // Set before capturing a CUDA graph.
  void set_dropout(bool on) { dropout_ = on ? kDropout : 0.0f; }

  // fp8: which of the encoder's GEMMs run in FP8 (one line per dense layer, from
  // Fp8Linear::plan()); empty for the other precisions.
  std::string fp8_plan() const;

 private:
  // Every position's logits (a training step computed the masked ones only).
  void complete_logits();
  void build();
  void allocate();
  void upload_initial_state();
  void count_masked();  // host: mlm_fits_ from the labels on the GPU (synchronises)

  // Steps (bert_steps.cpp; the dense layers in bert_dense.cpp).
  void run_forward(bool train);
  void layer_forward(int l, const void* x, LayerActs& L, bool train);
  void heads_forward(const void* x, bool train);
  void loss_forward_backward();
  void run_backward(bool accumulate);
  // dout: gradient of the layer output; result (gradient of x) in dres.
  void layer_backward(int l, const void* x, LayerActs& L, bool accumulate, void* dout, void* dres);
  // The attention core without flash_: scores, softmax, context, and their gradients.
  void unfused_attention_forward(uint32_t site, LayerActs& L, bool train);
  void unfused_attention_backward(uint32_t site, LayerActs& L, bool dropped);
  Dropout drop(uint32_t site, bool train) const;
  // The encoder's dense layers: FP8 (fp8_lin_) or the storage type (DenseLayer).
  DenseLayer& dense(EncoderDense which) const;
  // fp8: cast_done says the caller fused the layer's input cast into the kernel that
  // produced it (the GELU).
  void dense_forward(EncoderDense which, int l, const void* x, int64_t w_off, int64_t b_off,
                     void* y, bool cast_done = false);
  void dense_backward(const DenseBackward& a);
  void cast_fp8_weights();
  void calibrate_fp8();
  void before_step();  // FP8: weights set through set_tensor are cast
  void after_step();   // FP8: delayed scales updated

  void* param(int64_t off) const;  // working copy
  float* grad(int64_t off) const { return grads_.as<float>() + off; }
  float* master(int64_t off) const { return master_.as<float>() + off; }
  void* ws() const { return workspace_.get(); }
  size_t es() const { return dtype_size(dtype_); }

  ModelConfig config_;
  DType dtype_;
  bool train_;
  int b_, t_;
  int64_t n_;  // B * T
  float dropout_ = kDropout;
  double flops_ = 0;

  Stream stream_;
  LtHandle lt_;
  ParamLayout layout_;
  RegionTimer timer_;

  std::unique_ptr<DenseLayer> qkv_, attn_out_, ffn1_, ffn2_, transform_, decoder_, pooler_, nsp_;
  // Training: the MLM decoder on the masked rows only (decoder_masked_, mlm_cap_ rows,
  // gathered by compact_labels), where the batch's masked count fits mlm_cap_ (checked
  // on the host whenever the labels change). The loss only uses those rows; all
  // positions' logits are computed when get_tensor asks for them.
  std::unique_ptr<DenseLayer> decoder_masked_;
  int64_t mlm_cap_ = 0;
  bool mlm_fits_ = false;         // the labels' masked count <= mlm_cap_
  bool mlm_gathered_ = false;     // the last forward ran decoder_masked_
  bool logits_full_ = true;       // logits_ holds every position's logits
  bool weights_changed_ = false;  // an optimizer step since the last forward
  // Attention GEMMs, batched over B*H: scores_ (T, T) = A (T, D) B^T (also dP = dC V^T),
  // context_ (T, D) = A (T, T) B (T, D) (also dQ = dS K), transposed_ (T, D) =
  // A^T (T, T) B (T, D) (dV = P^T dC, dK = dS^T Q).
  std::unique_ptr<Gemm> scores_, context_, transposed_;
  // Fused attention (flash_attention.cu; config_.attention == kFused): lse_ (layers,
  // B, H, T) fp32 (training), delta_ (B, H, T) fp32 backward scratch.
  bool flash_ = false;
  DeviceBuffer lse_, delta_;
  bool fp8_ = false;
  bool fp8_weights_stale_ = false;
  std::unique_ptr<Fp8Linear> fp8_lin_[kEncoderDenseCount];  // fp8 only, by EncoderDense
  DeviceBuffer fp8_metas_;                                  // (4, layers, 3) Fp8Meta
  Fp8ScaleBatch fp8_weight_scales_;                         // the FP8 weights' current scaling

  // Flat arrays (ParamLayout): FP32 master, working copy (16-bit only), FP32
  // gradients, AdamW moments.
  DeviceBuffer master_, model_copy_, grads_, adam_m_, adam_v_;
  DeviceBuffer scaler_;  // LossScaleState
  DeviceBuffer rng_;     // (1) uint64 dropout step counter

  DeviceBuffer ids_, types_, mask_, labels_, nsp_labels_;  // (B, T) int32, (B) int32
  DeviceBuffer emb_z_, emb_stats_, emb_out_;               // (N, C), (N, 2), (N, C)
  std::vector<LayerActs> layers_;
  DeviceBuffer qkv_tok_;                        // (N, 3C) QKV GEMM output
  DeviceBuffer ctx_heads_;                      // (B, H, T, D)
  DeviceBuffer dense_out_;                      // (N, C) dense output before LN
  DeviceBuffer tr_h_, tr_g_, tr_stats_, tr_y_;  // MLM transform: (N, C) x2, (N, 2), (N, C)
  DeviceBuffer logits_;                         // (N, kVocabPadded)
  DeviceBuffer pool_pre_, pooled_;              // (B, C)
  DeviceBuffer nsp_logits_;                     // (B, kNspPadded), 2 real
  DeviceBuffer row_loss_;                       // (N + B) fp32
  DeviceBuffer counts_;                         // (2) fp32 valid MLM and NSP labels
  DeviceBuffer loss_;                           // (3) fp32 total, MLM, NSP

  // Backward scratch (training only).
  DeviceBuffer dlogits_;                         // (N, kVocabPadded)
  DeviceBuffer dnsp_, dpool_;                    // (B, kNspPadded), (B, C)
  DeviceBuffer d_out_, d_res_, d_drop_, d_ctx_;  // (N, C) each
  DeviceBuffer d_ctx_heads_, d_q_, d_k_, d_v_;   // (B, H, T, D) each
  DeviceBuffer d_qkv_;                           // (N, 3C)
  DeviceBuffer d_h_;                             // (N, F)
  DeviceBuffer d_probs_;                         // (B, H, T, T)
  DeviceBuffer partials_;                        // column-sum partials
  DeviceBuffer mlm_idx_, mlm_inv_, mlm_labels_;  // (cap), (N), (cap) int32: compact_labels
  DeviceBuffer mlm_x_, mlm_dx_;                  // (cap, C): gathered transform output, its grad
  DeviceBuffer workspace_;                       // cuBLASLt
};

}  // namespace bert
}  // namespace gpuvs::models
