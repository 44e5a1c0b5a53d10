// `gpuvs model llama --mode infer`: the decoder's prefill and decode measured as
// results (docs/models.md, Llama): time to first token and prefill tokens/s from
// repeated prefills of the prompt, then `generate` greedy decode steps, each one
// replay of one CUDA graph timed by events: inter-token latency p50/p99, decode
// tokens/s over the batch, and the bytes the step must read per second.
#pragma once

#include <vector>

#include "core/run_file.h"
#include "models/config.h"
#include "models/run_options.h"

namespace gpuvs::models::llama {

// Results .ttft, .prefill, .itl and .decode of model.llama-<size>.infer.<precision>;
// the decode result's parameters carry `bytes_per_step` and `achieved_bytes_per_s`
// (decode_bytes_per_step at the mean context over the step time), from which the
// caller derives the share of a measured copy bandwidth. Throws UsageError for an
// unknown size, a precision other than fp32 / bf16 / fp16 / fp8 (FP8 weights), or a
// context beyond the model's; OutOfMemoryError, naming the largest batch that fits,
// when the model does not fit.
// With `profile`, also .layer.decode.<region> results (Decoder::enable_profile) and,
// where the step takes the few-row projections, the decode result's `cublaslt_step_s`:
// the graphed step with cuBLASLt's GEMMs instead.
// With `batch_max`, the batch is the largest whose decoder (Decoder::memory_bytes)
// leaves `headroom` of the GPU's memory free, after a .max_batch result: the largest
// that fits at all, built once to check.
std::vector<Result> run_inference(const ModelRunOptions& run, int device, bool quick);

}  // namespace gpuvs::models::llama
