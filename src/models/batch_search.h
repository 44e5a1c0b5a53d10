// The largest batch that fits on a GPU, and a recommended batch that leaves headroom.
// Plain C++ over a callback `try_batch(batch)` (construct the model, run one step,
// report the memory it used), so the search is tested on the CPU with a fake.
//
// Search (docs/models.md, "--batch max"):
//  1. `start` (halved while it does not fit, down to 1);
//  2. then each candidate is the memory line's prediction of the largest batch that
//     fits, used(b) = fixed + per_item * b through the widest pair of fitting
//     candidates (one fit: proportional, no fixed part, which under-predicts), when
//     it falls inside the bracket: with an exact line, start, the proportional
//     guess, the line's prediction and one granule above it close the search in four
//     candidates (a plain doubling tries every power of two on the way, each a model
//     build and a step at a large batch);
//  3. otherwise, before the first failure, a gallop above the largest fit (lo + g,
//     lo + 2g, lo + 4g: the line under-predicts) or a doubling (no line), and with
//     both ends known the middle, until the bracket is at most `granularity` wide or
//     `relative_width` of the largest fit (or `max_probes` candidates were tried).
// Recommended batch: the largest b with baseline + fixed + per_item * b <=
// (1 - headroom) * total, from the line through the two largest fitting candidates
// (one candidate only: per_item = used / batch, no fixed part, which over-estimates
// and so errs small), clamped to [1, max_batch] and rounded down to a multiple of 8
// when >= 8 (tensor-core friendly shapes).
// Invariants: every candidate is in [1, limit]; no batch is tried twice; a failure
// never ends the search by itself (it is the upper end of the bracket).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace gpuvs::models {

// What one candidate did.
struct FitProbe {
  bool fits = false;
  // Device memory the candidate took (model and one step), bytes; nullopt unknown.
  std::optional<double> used_bytes;
  std::string detail;  // why it did not fit (the out-of-memory message)
  // Wall seconds: the model's construction, its one step, and the whole candidate
  // (construction, step and freeing); 0 where not measured.
  double build_s = 0, step_s = 0, total_s = 0;
};

struct BatchProbe {
  int batch = 0;
  FitProbe probe;
};

struct BatchSearchOptions {
  int start = 64;
  int limit = 1 << 16;  // never try more
  int granularity = 8;  // the bracket is closed once this narrow ...
  // ... or once at most this fraction of the largest fit: at 2600 images a ResNet-50
  // candidate that fits costs seconds, and 2 % of the largest batch is below what the
  // headroom leaves free anyway.
  double relative_width = 0.02;
  int max_probes = 24;
  double headroom = 0.10;     // fraction of total memory left free
  double total_bytes = 0;     // device memory (cudaMemGetInfo total)
  double baseline_bytes = 0;  // used before any candidate (context, other processes)
};

// used(b) = fixed_bytes + per_item_bytes * b.
struct MemoryLine {
  double fixed_bytes = 0;
  double per_item_bytes = 0;
};

struct BatchSearchResult {
  int max_batch = 0;      // largest batch that fit; 0: not even batch 1
  int first_failure = 0;  // smallest batch that did not fit; 0: none up to limit
  int recommended_batch = 0;
  std::optional<MemoryLine> memory;  // from the two largest fits
  std::string recommendation;        // how recommended_batch was decided, one line
  std::vector<BatchProbe> probes;    // in the order tried
};

// The line through the two largest fitting probes with a known memory figure, or
// proportional (no fixed part) from one; nullopt with none.
std::optional<MemoryLine> memory_line(const std::vector<BatchProbe>& probes);

// Largest batch whose predicted use stays under (1 - headroom) * total, as described
// above; `max_batch` >= 1.
int recommend_batch(const std::optional<MemoryLine>& line, int max_batch,
                    const BatchSearchOptions& options, std::string* how = nullptr);

// The largest batch the memory line through the widest pair of fitting probes predicts
// to fit, rounded down to the granularity, in [1, limit]; nullopt without a fitting
// probe with a memory figure or without the device's total.
std::optional<int> predicted_max_batch(const std::vector<BatchProbe>& probes,
                                       const BatchSearchOptions& options);

BatchSearchResult search_max_batch(const std::function<FitProbe(int)>& try_batch,
                                   const BatchSearchOptions& options);

}  // namespace gpuvs::models
