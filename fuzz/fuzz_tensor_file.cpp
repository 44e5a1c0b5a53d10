// libFuzzer target for the reference-tensor reader (models/tensor_file.h): the
// correctness tests hand it files dumped elsewhere, so any bytes must be refused
// cleanly.
//
// Properties checked on every input:
//  - parse_tensor_file either returns or throws gpuvs::Error with exit code 2 and a
//    one-line, valid UTF-8 message that starts with the file's name; any other
//    exception (a leaked nlohmann exception, std::bad_alloc, std::length_error) escapes
//    and the fuzzer reports it as a crash, as do out-of-bounds reads (ASan);
//  - an accepted file keeps the invariants of the header: each tensor holds numel()
//    finite values, its byte range fits the input, and the metadata names the format.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "models/tensor_file.h"

namespace {

[[noreturn]] void violated(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz_tensor_file: %s: %s\n", what, detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  gpuvs::models::TensorFile file;
  try {
    file = gpuvs::models::parse_tensor_file(bytes, "fuzz.safetensors");
  } catch (const gpuvs::Error& e) {
    const std::string msg = e.what();
    if (e.code() != gpuvs::ExitCode::kUsage) violated("exit code is not 2", msg);
    if (msg.rfind("fuzz.safetensors: ", 0) != 0) violated("message does not name the file", msg);
    if (msg.find('\n') != std::string::npos || msg.find('\r') != std::string::npos) {
      violated("message is not one line", msg);
    }
    // Throws (and so crashes) when the message is not valid UTF-8.
    (void)nlohmann::json(msg).dump();
    return 0;
  }
  if (file.metadata.at("format") != "gpuvs.ref") violated("format", file.metadata.at("format"));
  std::size_t values = 0;
  for (const auto& entry : file.tensors) {
    const gpuvs::models::HostTensor& t = entry.second;
    if (t.shape.size() > gpuvs::models::kMaxTensorRank) violated("rank", entry.first);
    if (t.numel() < 0 || static_cast<std::size_t>(t.numel()) != t.data.size()) {
      violated("numel differs from the values held", entry.first);
    }
    for (float v : t.data) {
      if (!std::isfinite(v)) violated("a value is not finite", entry.first);
    }
    values += t.data.size();
  }
  // Every value came from at least two bytes of the input.
  if (values * 2 > size) violated("more values than the input could hold", std::to_string(values));
  return 0;
}
