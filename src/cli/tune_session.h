// `gpuvs tune`: what the command line asked (checked in cli/cmd_tune.cpp before any GPU
// is probed), the measuring path that answers it, and the one way a tuned result is
// printed, whether measured now, taken from the cache or read with --show.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "cli/app.h"
#include "tune/emit.h"
#include "tune/tune_result.h"

namespace gpuvs::cli {

struct TuneOptions {
  tune::TuneRequest request;                       // models sorted, GEMM shapes canonical
  bool force = false;                              // measure even when the cache answers
  std::optional<std::filesystem::path> cache_dir;  // --cache DIR; else tune::default_cache_dir
  tune::EmitFormat emit = tune::EmitFormat::kTable;
  std::string gpu_list;  // "--gpu" text; empty: every GPU
};

// Measures what the cache cannot answer on each selected GPU, saves it, prints it
// with print_tune. A build without CUDA: CannotRunError.
ExitCode run_tune(const GlobalOptions& global, const TuneOptions& options);

// `doc` on stdout: the gpuvs.tune/1 document with `json`, else in `emit`'s form; each
// note (a cache warning, "answered from the cache ...") one line on stderr, so that
// stdout stays what a script sources or parses.
void print_tune(const tune::TuneDocument& doc, tune::EmitFormat emit, bool json,
                const std::vector<std::string>& notes);

// "8192x8192x8192:bf16" from a --gemm MxNxK[:precision] (M, N, K counts from 1 to
// 65536, 8k = 8000; precision fp64 fp32 tf32 bf16 fp16 fp8, bf16 when left out).
// Malformed: UsageError naming --gemm.
std::string canonical_gemm_shape(const std::string& text);

// `gpuvs detect`'s section after the system: for each GPU, its cached result in the
// cache folder (`cache`, else the default) or why there is none (docs/tune.md#detect).
std::string render_tuned_section(const SystemInfo& system,
                                 const std::optional<std::filesystem::path>& cache);

}  // namespace gpuvs::cli
