// Reader of the reference-tensor files (safetensors layout, gpuvs metadata): bytes ->
// checked header -> fp32 host tensors. Checks run in the order a reader needs them,
// so the first message names the first thing that is wrong: header length, JSON
// syntax (depth, duplicate keys), metadata (foreign file, version), each entry's
// fields, byte ranges (inside the data, no overlap), then the values.
// The message helpers of the run-file reader (core/run_file_json.h) keep every
// message one line of valid UTF-8.
#include "models/tensor_file.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/run_file_json.h"

namespace gpuvs::models {

static_assert(std::endian::native == std::endian::little,
              "tensor files are little-endian and read with memcpy");

namespace {

using json = nlohmann::json;

constexpr std::size_t kMaxDepth = 3;         // root object > entry object > shape array
constexpr double kMaxExactInt = 16777216.0;  // 2^24: every integer up to it is a float

enum class DType { kF32, kF16, kBF16, kI64, kI32 };

struct DTypeInfo {
  std::string_view name;
  DType dtype;
  std::size_t bytes;
};

// safetensors' dtype names ("F32", ...), only those the reference dumps use.
constexpr DTypeInfo kDTypes[] = {{"F32", DType::kF32, 4},
                                 {"F16", DType::kF16, 2},
                                 {"BF16", DType::kBF16, 2},
                                 {"I64", DType::kI64, 8},
                                 {"I32", DType::kI32, 4}};

struct Entry {
  std::string name;
  const DTypeInfo* dtype = nullptr;
  std::vector<int64_t> shape;
  uint64_t begin = 0;  // byte offsets into the data section
  uint64_t end = 0;
};

// Thrown from the JSON parser's callback; caught and turned into the file's message.
struct HeaderRefused {
  std::string what;
};

[[noreturn]] void fail(std::string_view file, const std::string& what) {
  run_json::fail(file, "", what);
}

std::string tensor_label(const std::string& name) {
  return "tensor " + run_json::quote(name);
}

// nlohmann's parse_error text without its "[json.exception.parse_error.101] parse
// error at " prefix, made printable (it quotes the bytes it last read).
std::string json_reason(const json::exception& e) {
  return run_json::printable(run_json::json_error_reason(e.what()), 200);
}

// The header as a JSON object; refuses nesting deeper than kMaxDepth and duplicate
// keys (JSON leaves their meaning open) while parsing.
json parse_header(std::string_view text, std::string_view file) {
  std::vector<std::set<std::string>> keys;  // one set per open object
  std::size_t depth = 0;
  const auto callback = [&](int /*depth*/, json::parse_event_t event, json& parsed) -> bool {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        if (++depth > kMaxDepth) {
          throw HeaderRefused{fmt::format("header nests deeper than {} levels", kMaxDepth)};
        }
        if (event == json::parse_event_t::object_start) keys.emplace_back();
        break;
      case json::parse_event_t::object_end:
        keys.pop_back();
        --depth;
        break;
      case json::parse_event_t::array_end:
        --depth;
        break;
      case json::parse_event_t::key: {
        const auto& key = parsed.get_ref<const std::string&>();
        if (!keys.back().insert(key).second) {
          throw HeaderRefused{"header has the key " + run_json::quote(key) + " twice"};
        }
        break;
      }
      case json::parse_event_t::value:
        break;
    }
    return true;
  };
  json header;
  try {
    header = json::parse(text.begin(), text.end(), callback);
  } catch (const HeaderRefused& r) {
    fail(file, r.what);
  } catch (const json::exception& e) {
    fail(file, "header is not valid JSON: " + json_reason(e));
  }
  if (!header.is_object()) {
    fail(file, fmt::format("header is a JSON {}, not an object", header.type_name()));
  }
  return header;
}

void check_metadata(const json& header, TensorFile& out) {
  const auto it = header.find("__metadata__");
  if (it == header.end()) {
    fail(out.name, "not a gpuvs reference file (no \"__metadata__\" in the header)");
  }
  if (!it->is_object()) {
    fail(out.name, fmt::format("\"__metadata__\" is a JSON {}, not an object", it->type_name()));
  }
  for (const auto& [key, value] : it->items()) {
    if (!value.is_string()) {
      fail(out.name, fmt::format("\"__metadata__\" value {} is a JSON {}, not a string",
                                 run_json::quote(key), value.type_name()));
    }
    out.metadata[key] = value.get<std::string>();
  }
  const auto format = out.metadata.find("format");
  if (format == out.metadata.end() || format->second != "gpuvs.ref") {
    fail(out.name, fmt::format("not a gpuvs reference file (\"__metadata__\" format is {}, not "
                               "\"gpuvs.ref\")",
                               format == out.metadata.end() ? std::string("missing")
                                                            : run_json::quote(format->second)));
  }
  const auto version = out.metadata.find("version");
  if (version == out.metadata.end()) fail(out.name, "\"__metadata__\" has no \"version\"");
  if (version->second != "1") {
    fail(out.name, fmt::format("reference file version {} is not supported (this gpuvs reads "
                               "version \"1\")",
                               run_json::quote(version->second)));
  }
}

uint64_t unsigned_field(const json& v, std::string_view file, const std::string& what) {
  if (!v.is_number_unsigned()) {
    const std::string text = v.dump(-1, ' ', false, json::error_handler_t::replace);
    fail(file,
         fmt::format("{} is {}, not a non-negative integer", what, run_json::printable(text, 40)));
  }
  return v.get<uint64_t>();
}

Entry parse_entry(const std::string& name, const json& v, std::string_view file,
                  uint64_t data_bytes) {
  Entry e;
  e.name = name;
  const std::string label = tensor_label(name);
  if (name.empty()) fail(file, "a tensor has an empty name");
  if (!v.is_object())
    fail(file, fmt::format("{} is a JSON {}, not an object", label, v.type_name()));
  for (const auto& [key, unused] : v.items()) {
    if (key != "dtype" && key != "shape" && key != "data_offsets") {
      fail(file, fmt::format("{} has the unknown field {}", label, run_json::quote(key)));
    }
  }
  for (const char* field : {"dtype", "shape", "data_offsets"}) {
    if (!v.contains(field)) fail(file, fmt::format("{} has no \"{}\"", label, field));
  }

  const json& dtype = v["dtype"];
  if (!dtype.is_string()) fail(file, fmt::format("{}: \"dtype\" is not a string", label));
  for (const DTypeInfo& info : kDTypes) {
    if (info.name == dtype.get_ref<const std::string&>()) e.dtype = &info;
  }
  if (e.dtype == nullptr) {
    fail(file, fmt::format("{}: dtype {} is not supported (F32, F16, BF16, I64, I32)", label,
                           run_json::quote(dtype.get<std::string>())));
  }

  const json& shape = v["shape"];
  if (!shape.is_array()) fail(file, fmt::format("{}: \"shape\" is not an array", label));
  if (shape.size() > kMaxTensorRank) {
    fail(file, fmt::format("{}: {} dimensions, more than {}", label, shape.size(), kMaxTensorRank));
  }
  // Bounded so that numel x dtype size cannot overflow (it must then equal the byte
  // range, which lies inside the file).
  constexpr uint64_t kMaxNumel = std::numeric_limits<uint64_t>::max() / 8;
  uint64_t numel = 1;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    const uint64_t d = unsigned_field(shape[i], file, fmt::format("{}: shape[{}]", label, i));
    // The first test also bounds the dimensions after a zero one.
    if (d > kMaxNumel || (d != 0 && numel > kMaxNumel / d)) {
      fail(file, fmt::format("{}: shape has too many elements", label));
    }
    numel *= d;
    e.shape.push_back(static_cast<int64_t>(d));
  }
  if (shape.empty()) numel = 1;

  const json& offsets = v["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2) {
    fail(file, fmt::format("{}: \"data_offsets\" is not an array of two integers", label));
  }
  e.begin = unsigned_field(offsets[0], file, label + ": data_offsets[0]");
  e.end = unsigned_field(offsets[1], file, label + ": data_offsets[1]");
  if (e.begin > e.end) {
    fail(file,
         fmt::format("{}: data_offsets [{}, {}] end before they begin", label, e.begin, e.end));
  }
  if (e.end > data_bytes) {
    fail(file, fmt::format("{}: data_offsets [{}, {}] reach past the data ({} bytes)", label,
                           e.begin, e.end, data_bytes));
  }
  const uint64_t expected = numel * e.dtype->bytes;
  if (e.end - e.begin != expected) {
    fail(file, fmt::format("{}: {} bytes for {} elements of {} ({} expected)", label,
                           e.end - e.begin, numel, e.dtype->name, expected));
  }
  return e;
}

template <typename T>
T load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

HostTensor convert(const Entry& e, const char* data, std::string_view file) {
  HostTensor t;
  t.shape = e.shape;
  const auto n = static_cast<std::size_t>((e.end - e.begin) / e.dtype->bytes);
  t.data.resize(n);
  const char* p = data + e.begin;
  const bool integer = e.dtype->dtype == DType::kI64 || e.dtype->dtype == DType::kI32;
  for (std::size_t i = 0; i < n; ++i, p += e.dtype->bytes) {
    double v = 0;
    switch (e.dtype->dtype) {
      case DType::kF32:
        v = load<float>(p);
        break;
      case DType::kF16:
        v = half_to_float(load<uint16_t>(p));
        break;
      case DType::kBF16:
        v = bfloat16_to_float(load<uint16_t>(p));
        break;
      case DType::kI64:
        v = static_cast<double>(load<int64_t>(p));
        break;
      case DType::kI32:
        v = load<int32_t>(p);
        break;
    }
    if (integer && std::fabs(v) > kMaxExactInt) {
      fail(file, fmt::format("{}: element {} ({}) does not fit a float exactly (|v| > 2^24)",
                             tensor_label(e.name), i, static_cast<int64_t>(v)));
    }
    if (!std::isfinite(v)) {
      fail(file, fmt::format("{}: element {} is not finite ({})", tensor_label(e.name), i, v));
    }
    t.data[i] = static_cast<float>(v);
  }
  return t;
}

}  // namespace

const HostTensor& TensorFile::at(const std::string& tensor) const {
  const auto it = tensors.find(tensor);
  if (it == tensors.end()) fail(name, "no tensor " + run_json::quote(tensor));
  return it->second;
}

float half_to_float(uint16_t bits) {
  const uint32_t sign = (bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1Fu;
  const uint32_t mantissa = bits & 0x3FFu;
  if (exponent == 0) {
    // Zero or subnormal: mantissa x 2^-24, exact in float.
    const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -magnitude : magnitude;
  }
  uint32_t out = 0;
  if (exponent == 0x1F) {
    out = sign | 0x7F800000u | (mantissa << 13);  // infinity or NaN (payload kept)
  } else {
    out = sign | ((exponent - 15 + 127) << 23) | (mantissa << 13);
  }
  return std::bit_cast<float>(out);
}

float bfloat16_to_float(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

float e4m3_to_float(uint8_t bits) {
  const bool negative = (bits & 0x80u) != 0;
  const int exponent = (bits >> 3) & 0xF;
  const int mantissa = bits & 0x7;
  if (exponent == 0xF && mantissa == 0x7) return std::numeric_limits<float>::quiet_NaN();
  // Subnormal: mantissa x 2^-9; normal: (8 + mantissa) x 2^(exponent - 10), bias 7.
  const float magnitude = exponent == 0
                              ? std::ldexp(static_cast<float>(mantissa), -9)
                              : std::ldexp(static_cast<float>(8 + mantissa), exponent - 10);
  return negative ? -magnitude : magnitude;
}

float round_to_e4m3(float v) {
  if (std::isnan(v)) return v;
  const float a = std::fabs(v);
  if (a >= 448.0f) return std::copysign(448.0f, v);
  if (a == 0.0f) return v;
  // The spacing of E4M3 values around a: 2^(e - 3) for normals (e >= -6), 2^-9 below.
  const int e = std::max(std::ilogb(a), -6);
  const float quantum = std::ldexp(1.0f, e - 3);
  const float r = std::nearbyint(a / quantum) * quantum;  // ties to even
  return std::copysign(std::min(r, 448.0f), v);
}

TensorFile parse_tensor_file(std::string_view bytes, std::string_view name) {
  TensorFile out;
  out.name = std::string(name);
  if (bytes.size() < 8) {
    fail(name, fmt::format("{} bytes, too short for a tensor file (an 8-byte header length "
                           "comes first)",
                           bytes.size()));
  }
  const uint64_t header_bytes = load<uint64_t>(bytes.data());
  if (header_bytes < 2 || header_bytes > kMaxTensorHeaderBytes) {
    fail(name, fmt::format("header length {} is outside 2..{} bytes", header_bytes,
                           kMaxTensorHeaderBytes));
  }
  if (header_bytes > bytes.size() - 8) {
    fail(name, fmt::format("header length {} reaches past the end of the file ({} bytes)",
                           header_bytes, bytes.size()));
  }
  const json header = parse_header(bytes.substr(8, header_bytes), name);
  check_metadata(header, out);

  const std::string_view data = bytes.substr(8 + header_bytes);
  std::vector<Entry> entries;
  for (const auto& [key, value] : header.items()) {
    if (key == "__metadata__") continue;
    entries.push_back(parse_entry(key, value, name, data.size()));
  }
  std::vector<const Entry*> by_offset;
  for (const Entry& e : entries) {
    if (e.end > e.begin) by_offset.push_back(&e);
  }
  std::sort(by_offset.begin(), by_offset.end(), [](const Entry* a, const Entry* b) {
    return std::pair(a->begin, a->end) < std::pair(b->begin, b->end);
  });
  for (std::size_t i = 1; i < by_offset.size(); ++i) {
    const Entry& a = *by_offset[i - 1];
    const Entry& b = *by_offset[i];
    if (b.begin < a.end) {
      fail(name,
           fmt::format("{} and {} overlap (bytes [{}, {}) and [{}, {}))", tensor_label(a.name),
                       tensor_label(b.name), a.begin, a.end, b.begin, b.end));
    }
  }
  for (const Entry& e : entries)
    out.tensors.emplace(e.name, convert(e, data.data(), name));
  return out;
}

TensorFile load_tensor_file(const std::filesystem::path& path) {
  const std::string name = path.string();
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(name, "cannot open (missing or unreadable)");
  // One read of the whole file (a ResNet-50 reference is ~250 MB).
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) fail(name, "cannot read its size: " + ec.message());
  std::string bytes(static_cast<std::size_t>(size), '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (static_cast<std::uintmax_t>(in.gcount()) != size) fail(name, "read error (file shrank?)");
  return parse_tensor_file(bytes, name);
}

}  // namespace gpuvs::models
