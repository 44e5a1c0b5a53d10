// libFuzzer target for the other files users hand gpuvs: claims (CSV, and TOML where
// built with toml++), catalogues and prices. The first input byte picks the loader;
// the rest is the file. Every input must either load or throw gpuvs::Error with exit
// code 2 and one line naming the file; anything else (a leaked library exception, a
// crash, a sanitizer report) is a bug the fuzzer reports.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "advise/prices.h"
#include "core/error.h"
#include "report/claims.h"
#include "specs/catalogue.h"

namespace {

void check_error(const gpuvs::Error& e, std::string_view name) {
  const std::string msg = e.what();
  const bool ok = e.code() == gpuvs::ExitCode::kUsage && msg.rfind(name, 0) == 0 &&
                  msg.find('\n') == std::string::npos;
  if (!ok) {
    std::fprintf(stderr, "fuzz_loaders: bad error for %.*s: %s\n", int(name.size()), name.data(),
                 msg.c_str());
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  const std::string_view name = (data[0] % 4 == 0)   ? "claims.csv"
                                : (data[0] % 4 == 1) ? "claims.toml"
                                : (data[0] % 4 == 2) ? "catalogue.json"
                                                     : "prices.csv";
  try {
    switch (data[0] % 4) {
      case 0:
      case 1:
        gpuvs::parse_claims(text, name);
        break;
      case 2:
        gpuvs::Catalogue::parse(text, name);
        break;
      default:
        gpuvs::advise::Prices::parse(text, name, gpuvs::Catalogue::builtin());
        break;
    }
  } catch (const gpuvs::Error& e) {
    check_error(e, name);
  }
  return 0;
}
