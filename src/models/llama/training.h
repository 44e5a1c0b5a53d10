// The Llama decoder for training, natively, on the trainer of models/trainer.h (CUDA
// graphs, accumulation, the largest-batch search, the per-region profile): a causal
// language model over B sequences of T tokens, every layer's activations kept for the
// backward (no recomputation), then AdamW.
//
// Per layer (N = B*T rows): RMSNorm -> the fused Q, K, V projection (cuBLASLt) ->
// rotary embedding and the head split (train_kernels.h) -> causal grouped-query
// attention, no probabilities in memory, through cuDNN's fused SDPA
// (layers/cudnn_sdpa.h, reading and writing the token-major tensors itself) or gpuvs's
// own FlashAttention-2-style kernels (bert/kernels.h, then the head merge;
// config.attention_kernel; head size 64 or 128) -> output projection with
// the residual added in its epilogue (beta 1) -> RMSNorm -> the fused gate and up
// projection -> SwiGLU -> down projection with the residual. Then the final RMSNorm,
// the LM head over every position (N, V) and the next-token cross-entropy (the labels
// are the ids shifted by one, the last position ignored: transformers'
// LlamaForCausalLM with labels = input_ids), its gradient written over the logits.
//
// Precision: bf16 (activations, the residual stream, the GEMMs' inputs in bf16, FP32
// accumulation), FP32 master weights, FP32 gradients (the weight-gradient GEMMs write
// FP32, so micro-steps and a tied embedding's two contributions add in FP32). fp8
// (compute capability 8.9 or newer): the four projections of every layer run their
// forward, data- and weight-gradient GEMMs in FP8 (bert/fp8_linear.h: E4M3 inputs and
// weights, E5M2 gradients, per-tensor scales, delayed for activations and gradients
// and current for weights, as Transformer Engine and torchao's Float8 training scale
// them); attention, the norms, SwiGLU, the LM head and the loss stay bf16 (the head as
// torchtitan's Float8 training leaves its output layer). A GEMM cuBLASLt will not run
// in FP8 runs in bf16 (fp8_plan() says which). Other precisions are refused with the
// reason (the attention kernels are 16-bit).
//
// Optimizer: AdamW (torch.optim.AdamW: bias-corrected, decoupled decay) with Llama 3's
// published settings (The Llama 3 Herd of Models, 2024, section 3.4.1: peak learning
// rate 3e-4 for the 8B; betas 0.9 / 0.95 and weight decay 0.1 as Llama 2's paper
// gives them, eps 1e-5), a constant rate (a throughput benchmark: no schedule), decay
// on every matrix (the embeddings and the LM head included), none on RMSNorm weights.
//
// Weights: normal with transformers' initializer_range 0.02, RMSNorm weights 1, from
// the seed; nothing is downloaded. The input batch is synthetic (lm_inputs).
#pragma once

#include <memory>

#include "models/llama/shapes.h"
#include "models/model.h"

namespace gpuvs::models {

// config.model is "llama-1b", "llama-3b" or "llama-8b", config.mode kTrain, config.seq
// the sequence length. Throws UsageError for an unknown size, a precision other than
// bf16 or fp8 (fp8 below compute capability 8.9), a sequence that is not a multiple of 64 or beyond
// the model's context, a batch below 1; OutOfMemoryError when it does not fit (the message says
// what the weights and optimizer state alone take where those do not fit).
std::unique_ptr<Model> make_llama_training(const ModelConfig& config, int device);

// The same at any decoder shape (the checks against transformers use a small one):
// config.model is then only a name. Throws as above; head size 64 or 128, the hidden
// size a multiple of 256.
std::unique_ptr<Model> make_llama_training_of_shape(const ModelConfig& config,
                                                    const llama::Shape& shape, int device);

}  // namespace gpuvs::models
