// Files built into the binary (data/ and the HTML report's assets), so one gpuvs
// binary carries its catalogue, published figures and reference runs anywhere.
// Paths are relative to the repository root: "data/catalogue/gpus.json".
#pragma once

#include <optional>
#include <string_view>
#include <vector>

namespace gpuvs {

std::optional<std::string_view> embedded_file(std::string_view path);

// Paths of the embedded files that start with `prefix`, in a stable order.
std::vector<std::string_view> embedded_files(std::string_view prefix);

}  // namespace gpuvs
