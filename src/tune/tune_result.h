// What `gpuvs tune` finds for one GPU: the settings it recommends, each with the
// measured figures it rests on (result ids of the run file written beside it), and the
// device fingerprint the result is valid for. Plain C++ (no CUDA): a stored result is
// shown, emitted and checked against a GPU's fingerprint on any machine
// (docs/tune.md, schema gpuvs.tune/1).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/run_file.h"

namespace gpuvs::tune {

inline constexpr std::string_view kTuneSchema = "gpuvs.tune/1";

// Everything that can change what is fastest on a GPU. Two fingerprints that differ in
// any field do not share a cached result.
struct Fingerprint {
  std::string uuid;  // "GPU-…": the cache file's name
  std::string name;  // "NVIDIA H200"
  std::optional<std::string> driver_version;
  std::optional<std::string> cuda_driver_version;
  std::optional<std::string> cuda_runtime_version;
  std::optional<std::string> cublas_version;
  std::optional<std::string> cudnn_version;
  std::optional<std::string> nccl_version;
  std::optional<double> power_limit_w;  // enforced limit
  std::optional<bool> mig_enabled;
  std::optional<bool> ecc_enabled;

  bool operator==(const Fingerprint&) const = default;
};

// What was asked: a cached result answers a request only when it covers it.
struct TuneRequest {
  std::vector<std::string> models;  // "resnet50", "bert-large" (sorted, unique)
  bool quick = false;
  double headroom = 0.10;                // memory left free by the recommended batch
  std::optional<int64_t> global_batch;   // --global-batch N
  std::vector<std::string> gemm_shapes;  // canonical "MxNxK:precision", as given, in order

  bool operator==(const TuneRequest&) const = default;
};

// A measured figure a setting rests on: a result of the run file (id + the parameters
// that tell its configuration apart), its value in the result's unit.
struct Evidence {
  std::string result_id;                         // "model.bert-large.train.bf16"
  std::map<std::string, ParamValue> parameters;  // a subset: batch, graph, precision...
  double value = 0;
  std::string unit;                // "1/s" style, as the run file has it
  std::string basis = "measured";  // measured | derived

  bool operator==(const Evidence&) const = default;
};

// One recommendation. `scope` says what it is for, outermost first:
//   {"bert-large", "train"}                  a model and mode
//   {"gemm", "8192x8192x8192:bf16"}          a GEMM shape
//   {"nccl", "all_reduce", "8MiB-64MiB"}     a collective and message-size range
//   {"host"}                                 host transfers
// `key` is the setting ("precision", "batch", "batch_knee", "cuda_graph", "micro_batch",
// "accumulation", "algorithm", "NCCL_ALGO", "NCCL_PROTO", "host_memory", ...); `value`
// what to set. `env` names the environment variable that applies it (empty: none: the
// setting is the job's own, a flag or a config field).
struct Setting {
  std::vector<std::string> scope;
  std::string key;
  ParamValue value;
  std::string env;
  std::string why;     // one line: "1.12x bf16's throughput (fp8 pays from 5 %)"
  std::string caveat;  // empty or one line (fp8's accuracy, an estimate)
  std::vector<Evidence> rests_on;

  bool operator==(const Setting&) const = default;
};

// A section with nothing to recommend, and why ("nccl": "one GPU: collectives need two").
struct Absent {
  std::string section;
  std::string why;

  bool operator==(const Absent&) const = default;
};

// The result for one GPU: the cache file's content.
struct DeviceTune {
  Fingerprint fingerprint;
  int gpu_index = 0;  // in the run it was measured in
  TuneRequest request;
  std::string created_at;    // ISO 8601 UTC
  std::string tool_version;  // gpuvs version that measured it
  std::string git_sha;
  std::string run_file;        // path of the run file holding the evidence
  double measure_seconds = 0;  // wall time the measurements took
  std::vector<Setting> settings;
  std::vector<Absent> absent;

  bool operator==(const DeviceTune&) const = default;
};

// A `gpuvs tune --json` document and a cache file: the schema and one entry per GPU
// (a cache file holds exactly one).
struct TuneDocument {
  std::string schema = std::string(kTuneSchema);
  std::vector<DeviceTune> devices;

  bool operator==(const TuneDocument&) const = default;
};

}  // namespace gpuvs::tune
