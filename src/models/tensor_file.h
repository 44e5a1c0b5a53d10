// Reference tensors dumped once by a PyTorch script (scripts/models/dump_resnet50.py)
// and read by the correctness tests of the models: the safetensors layout
// (https://github.com/huggingface/safetensors, "Format"): an 8-byte little-endian
// header length N, N bytes of JSON {name: {"dtype", "shape", "data_offsets"}, ...,
// "__metadata__": {string: string}}, then the data; offsets are relative to the first
// byte after the header. gpuvs requires "__metadata__" to carry
// {"format": "gpuvs.ref", "version": "1"}, so a foreign file is named as such.
//
// Invariants of an accepted file:
//  - every tensor has a dtype among F32, F16, BF16, I64, I32, at most kMaxRank
//    dimensions, a byte range inside the data section whose length is exactly
//    numel x dtype size, and no two non-empty ranges overlap;
//  - values are converted to fp32; integers are exact (|v| <= 2^24) and every value
//    is finite, so a comparison against them is meaningful;
//  - the JSON header has no duplicate key and nests at most 3 levels.
// Anything else throws UsageError "<path>: <what>", one line whatever the file holds.
// Plain C++ (no CUDA): tested and fuzzed on machines without a GPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>

#include "models/config.h"

namespace gpuvs::models {

struct TensorFile {
  std::string name;  // the path it was read from, for messages
  std::map<std::string, HostTensor> tensors;
  std::map<std::string, std::string> metadata;  // "__metadata__" (format, version, ...)

  bool contains(const std::string& tensor) const { return tensors.count(tensor) != 0; }
  // The tensor, or UsageError "<path>: no tensor "<name>"".
  const HostTensor& at(const std::string& tensor) const;
};

inline constexpr std::size_t kMaxTensorRank = 8;
// safetensors' own bound on the header (MAX_HEADER_SIZE in its Rust crate).
inline constexpr std::size_t kMaxTensorHeaderBytes = 100'000'000;

// Parses the bytes of a file; `name` starts every message.
TensorFile parse_tensor_file(std::string_view bytes, std::string_view name);

// Reads and parses `path` (UsageError when it cannot be read).
TensorFile load_tensor_file(const std::filesystem::path& path);

// IEEE 754 binary16 and bfloat16 bit patterns to float (exact; NaN stays NaN).
float half_to_float(uint16_t bits);
float bfloat16_to_float(uint16_t bits);
// An FP8 E4M3 (OCP "E4M3FN": no infinities, S.1111.111 NaN) bit pattern to float.
float e4m3_to_float(uint8_t bits);
// v rounded to the nearest E4M3 value (ties to even), saturating at +-448 as CUDA's
// __NV_SATFINITE conversions do; NaN stays NaN.
float round_to_e4m3(float v);

}  // namespace gpuvs::models
