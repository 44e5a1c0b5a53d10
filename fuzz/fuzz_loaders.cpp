// libFuzzer target for the other files users hand gpuvs: claims (CSV, and TOML where
// built with toml++), catalogues and prices. The first input byte picks the loader;
// the rest is the file. Every input must either load or throw gpuvs::Error with exit
// code 2 and one line naming the file; anything else (a leaked library exception, a
// crash, a sanitizer report) is a bug the fuzzer reports. What loads then goes
// through the output step (render_outputs.h): compare, claims, the HTML report and
// the advisor in every format, none of which may throw.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "advise/prices.h"
#include "core/error.h"
#include "render_outputs.h"
#include "report/claims.h"
#include "specs/catalogue.h"

namespace {

constexpr const char* kFuzzer = "fuzz_loaders";

// Claims judged against the built-in catalogue, beside a datasheet column.
void outputs_of_claims(const std::vector<gpuvs::Claim>& claims) {
  const gpuvs::Catalogue& builtin = gpuvs::Catalogue::builtin();
  std::vector<gpuvs::ClaimJudgement> judged;
  gpuvs_fuzz::must_not_throw(kFuzzer, "judge_claims", [&] {
    judged = gpuvs::judge_claims(claims, {}, builtin, gpuvs::Published::builtin());
  });
  gpuvs::CompareInput h200;
  h200.spec = builtin.find("H200-SXM");
  gpuvs_fuzz::render_all(kFuzzer, {h200}, {}, &judged, builtin);
}

// The first entries of a catalogue side by side, claims judged against it, and the
// advisor choosing among its GPUs.
void outputs_of_catalogue(const gpuvs::Catalogue& catalogue) {
  std::vector<gpuvs::CompareInput> inputs;
  for (const gpuvs::GpuSpec& g : catalogue.gpus()) {
    if (inputs.size() == 3) break;
    gpuvs::CompareInput in;
    in.spec = &g;
    inputs.push_back(in);
  }
  std::vector<gpuvs::ClaimJudgement> judged;
  gpuvs_fuzz::must_not_throw(kFuzzer, "judge_claims", [&] {
    judged = gpuvs::judge_claims(gpuvs_fuzz::sample_claims(), {}, catalogue,
                                 gpuvs::Published::builtin());
  });
  gpuvs_fuzz::render_all(kFuzzer, inputs, {}, &judged, catalogue);
  gpuvs_fuzz::advise_all(kFuzzer, catalogue, gpuvs::advise::Measurements{}, nullptr);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  const std::string_view name = (data[0] % 4 == 0)   ? "claims.csv"
                                : (data[0] % 4 == 1) ? "claims.toml"
                                : (data[0] % 4 == 2) ? "catalogue.json"
                                                     : "prices.csv";
  const gpuvs::Catalogue& builtin = gpuvs::Catalogue::builtin();
  const gpuvs::advise::Measurements none;
  try {
    switch (data[0] % 4) {
      case 0:
      case 1:
        outputs_of_claims(gpuvs::parse_claims(text, name));
        break;
      case 2:
        outputs_of_catalogue(gpuvs::Catalogue::parse(text, name));
        break;
      default: {
        const auto prices = gpuvs::advise::Prices::parse(text, name, builtin);
        gpuvs_fuzz::advise_all(kFuzzer, builtin, none, &prices);
        break;
      }
    }
  } catch (const gpuvs::Error& e) {
    gpuvs_fuzz::check_usage_error(kFuzzer, e, name);
  }
  return 0;
}
