#include "gpu/check.h"

#include <fmt/format.h>

#include <filesystem>

namespace gpuvs::detail {

void throw_check_failure(const char* library, const char* expr, int code, const std::string& detail,
                         const char* file, int line) {
  throw Error(fmt::format("{} error {} ({}) in {} at {}:{}", library, code, detail, expr,
                          std::filesystem::path(file).filename().string(), line));
}

}  // namespace gpuvs::detail
