// What every benchmark and model writes into a run file, in one table: the result ids
// of each (exact, or a pattern whose "{name}" parts take listed values), their unit,
// the parameters that tell its configurations apart, and the benchmarks that write
// them. No other file spells a result id: benchmarks and models build theirs with
// result_id(); the metric vocabulary (specs/metrics), compare, claims, the HTML report
// and the advisor find them through this table. CUDA-free, so `gpuvs bench --list`
// and every reader of run files work in a build without CUDA.
//
// Invariants (tests/cpu/test_produces.cpp):
//  - every id a family can take (its closed placeholders expanded) matches that family
//    and no other;
//  - a placeholder with no listed values ("open") is the last part of its pattern and
//    stands for one or more dotted words (a layer name);
//  - every family is written by at least one benchmark or importer of the table;
//  - a family with a twin has the twin's unit and configuration, and placeholder
//    values that are the twin's.
#pragma once

#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gpuvs {

// The families of result ids. Code names a family by this enum; its pattern, unit and
// configuration parameters are in the table (produces.cpp).
enum class Family {
  kHbmStream,          // memory.hbm.{op}
  kL2Read,             // memory.l2.read
  kSmemRead,           // memory.smem.read
  kReadSweep,          // memory.read_sweep
  kLatency,            // memory.latency
  kLargestAllocation,  // memory.capacity.largest_allocation
  kTotalAllocatable,   // memory.capacity.total_allocatable
  kFma,                // compute.fma.{type}
  kGemm,               // compute.gemm.{precision}
  kGemmBest,           // compute.gemm.{precision}.best
  kGemmSustained,      // compute.gemm.{precision}.sustained
  kRoofline,           // roofline.{kind}
  kRooflineRidge,      // roofline.{kind}.ridge
  kHostCopy,           // host.{direction}.{memory}
  kZeroCopy,           // host.zerocopy.{op}
  kZeroCopySparse,     // host.zerocopy.sparse
  kPeerLink,           // peer.link (one GPU: unsupported)
  kPeerCopy,           // peer.{engine}.{direction}
  kPeerLatency,        // peer.latency
  kCollectiveBusbw,    // collective.{op}.busbw
  kCollectiveTime,     // collective.{op}.time
  kNcclTestsBusbw,     // collective.{op}.busbw.nccl_tests
  kNcclTestsTime,      // collective.{op}.time.nccl_tests
  kLaunchLatency,      // launch.empty.latency
  kLaunchRate,         // launch.empty.throughput
  kGraphNode,          // launch.graph.node
  kLaunchChain,        // launch.chain.{mode}
  kModelRate,          // model.{model}.{mode}.{precision}
  kModelFlops,         // ... .flops
  kModelTokens,        // ... .tokens
  kModelStepTime,      // ... .step_time
  kModelPeakMemory,    // ... .peak_memory
  kModelEnergy,        // ... .energy_per_item
  kModelMaxBatch,      // ... .max_batch
  kModelLayers,        // ... .layer (a model that does not time its layers)
  kModelLayer,         // ... .layer.{layer}
  kModelPrefill,       // ... .prefill (decoders)
  kModelDecode,        // ... .decode
  kModelTtft,          // ... .ttft
  kModelItl,           // ... .itl
  kModelDecodeShare,   // ... .decode.bandwidth_share
  kModelMfu,           // ... .mfu (decoder training)
  kModelMfuGemm,       // ... .mfu.gemm (decoder training, against a measured GEMM)
  kNvbwHostCopy,       // host.{direction}.{memory}.nvbandwidth (imported)
  kNvbwPeerCopy,       // peer.{engine}.{direction}.nvbandwidth (imported)
  kNvbwPeerLatency,    // peer.latency.nvbandwidth (imported)
  kNvbandwidth,        // nvbandwidth.{testcase} (imported, no gpuvs twin)
  kNvbench,            // nvbench.{figure} (imported)
  kCount,
};

// A value a placeholder can take; `unit`, when set, replaces the family's unit for
// results with that value (INT8 GEMMs count OP/s, not FLOP/s).
struct PlaceholderValue {
  std::string_view text;
  std::string_view unit = {};
};

struct Placeholder {
  std::string_view name;                 // "op" for "{op}"
  std::vector<PlaceholderValue> values;  // empty: open (one or more dotted words)
};

// A parameter that tells configurations of a family apart. Where `fallback` is set, a
// result without the parameter has that value (files written before it existed), and
// the value is left out of a configuration's short description.
struct ConfigParameter {
  std::string_view name;           // "batch"
  std::string_view fallback = {};  // "1" for accumulate, "true" for graph
};

struct FamilyDef {
  Family family;
  std::string_view pattern;  // "memory.hbm.{op}"
  // Base SI unit, or a template "{item}/s", "J/{item}", "{item}": the model's item
  // (img, seq), from the model of the id; "{batch}": what its batch counts.
  std::string_view unit;
  std::string_view what;  // one line: what it measures
  std::vector<Placeholder> placeholders;
  std::vector<ConfigParameter> config;
  // Figures another tool measured ("nccl-tests", "nvbandwidth", "nvbench"); empty for
  // gpuvs's own.
  std::string_view tool = {};
  // The gpuvs family whose definition this tool's figures share, where they share one:
  // the pattern is that family's plus "." and a suffix, the unit and configuration are
  // its, and compare shows these figures in its rows where a run has none of gpuvs's.
  std::optional<Family> twin_of = {};
};

enum class BenchScope { kPerDevice, kAllDevices };

// A benchmark of `gpuvs bench` and `gpuvs run`: what `--list` shows and what it writes.
struct BenchmarkDef {
  std::string_view name;     // "memory.hbm"
  std::string_view group;    // "memory"
  std::string_view summary;  // one line for `gpuvs bench --list`
  bool in_run;               // part of `gpuvs run`'s standard suite
  BenchScope scope;          // once per GPU, or once for every selected GPU at once
  std::vector<Family> writes;
};

// A native model: its id in `gpuvs model` and in result ids, and what one item is.
struct ModelDef {
  std::string_view id;       // "bert-large"
  std::string_view display;  // "BERT-large"
  std::string_view item;     // "seq": throughput in seq/s, energy in J/seq
  bool has_seq;              // sequence length is a parameter
  bool has_tokens;           // writes tokens/s
  bool decoder = false;      // prefill and decode (Llama)
  // What a batch counts: the item, but sequences of a decoder's tokens.
  std::string_view batch_unit() const { return decoder ? "sequences" : item; }
};

// A tool whose output `gpuvs import` reads into a run file (import/import.h).
struct ImporterDef {
  std::string_view tool;   // "nccl-tests", as typed after `gpuvs import`
  std::string_view reads;  // one line: which of its outputs
  std::vector<Family> writes;
};

std::span<const FamilyDef> families();
const FamilyDef& family_def(Family f);
std::span<const BenchmarkDef> benchmark_defs();
const BenchmarkDef* find_benchmark_def(std::string_view name);
std::span<const ImporterDef> importer_defs();
const ImporterDef* find_importer_def(std::string_view tool);
std::span<const ModelDef> model_defs();
const ModelDef* find_model_def(std::string_view id);

// The result id of `family` with `values` for its placeholders, in pattern order.
// Throws std::logic_error for a wrong count or a value outside a closed placeholder's
// list: a benchmark writing an id the table does not hold is a programming error.
std::string result_id(Family family, std::initializer_list<std::string_view> values = {});
std::string result_id(Family family, const std::vector<std::string>& values);

// What an id is: its family and the value of each placeholder. nullopt for an id no
// family of the table holds (a file from another tool, or a newer gpuvs).
struct IdMatch {
  const FamilyDef* family = nullptr;
  std::vector<std::string> values;  // by placeholder, in pattern order

  // The value of placeholder `name`, "" when the family has none of that name.
  std::string value(std::string_view name) const;
};
std::optional<IdMatch> match_result_id(std::string_view id);

// The ids of other tools' figures of `id`'s definition: for each family whose twin_of
// is `id`'s family, its id with the same placeholder values, where it takes them
// ("collective.all_reduce.busbw" -> "collective.all_reduce.busbw.nccl_tests").
std::vector<std::string> tool_twin_ids(std::string_view id);

// The unit of results of `family` with these placeholder values (see FamilyDef::unit).
std::string family_unit(const FamilyDef& def, const std::vector<std::string>& values);

// Every id a family can take, its open placeholders as "{name}": the table's
// documentation and its test.
std::vector<std::string> expand_family(const FamilyDef& def);

}  // namespace gpuvs
