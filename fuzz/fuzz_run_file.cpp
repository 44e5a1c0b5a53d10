// libFuzzer target for the run-file reader (users hand us run files).
//
// Properties checked on every input:
//  - parse_run_file either returns or throws gpuvs::Error with exit code 2 and a
//    one-line, valid UTF-8 message that starts with the file's name; any other
//    exception (a leaked nlohmann exception, std::bad_alloc) escapes and the fuzzer
//    reports it as a crash;
//  - an accepted input round-trips: to_json_text of it parses again, and writing that
//    gives the same text (the canonical form is a fixed point);
//  - an accepted input goes through the output step (render_outputs.h): every GPU of
//    the run beside a datasheet column in every format of compare, claims judged
//    against it, the HTML report, and the advisor using its measurements; none of it
//    may throw.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/run_file.h"
#include "render_outputs.h"

namespace {

[[noreturn]] void violated(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz_run_file: %s: %s\n", what, detail.c_str());
  std::abort();
}

void outputs_of(const gpuvs::RunFile& run) {
  constexpr const char* kFuzzer = "fuzz_run_file";
  const gpuvs::Catalogue& builtin = gpuvs::Catalogue::builtin();
  std::vector<gpuvs::CompareInput> inputs;
  for (const gpuvs::GpuInfo& g : run.system.gpus) {
    if (inputs.size() == 4) break;
    gpuvs::CompareInput in;
    in.run = &run;
    in.gpu_index = g.index;
    in.run_ref = "fuzz.json";
    inputs.push_back(in);
  }
  gpuvs::CompareInput h200;
  h200.spec = builtin.find("H200-SXM");
  inputs.push_back(h200);
  std::vector<gpuvs::ClaimJudgement> judged;
  gpuvs_fuzz::must_not_throw(kFuzzer, "judge_claims", [&] {
    judged = gpuvs::judge_claims(gpuvs_fuzz::sample_claims(), inputs, builtin,
                                 gpuvs::Published::builtin());
  });
  gpuvs_fuzz::render_all(kFuzzer, inputs, {&run}, &judged, builtin);
  gpuvs::advise::Measurements measured;
  gpuvs_fuzz::must_not_throw(kFuzzer, "Measurements::add_run",
                             [&] { measured.add_run(run, "fuzz.json", builtin); });
  gpuvs_fuzz::advise_all(kFuzzer, builtin, measured, nullptr);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  gpuvs::RunFile run;
  try {
    run = gpuvs::parse_run_file(text, "fuzz.json");
  } catch (const gpuvs::Error& e) {
    const std::string msg = e.what();
    if (e.code() != gpuvs::ExitCode::kUsage) violated("exit code is not 2", msg);
    if (msg.rfind("fuzz.json: ", 0) != 0) violated("message does not name the file", msg);
    if (msg.find('\n') != std::string::npos || msg.find('\r') != std::string::npos) {
      violated("message is not one line", msg);
    }
    // Throws (and so crashes) when the message is not valid UTF-8.
    (void)nlohmann::json(msg).dump();
    return 0;
  }
  // Nothing below may throw for an accepted input.
  const std::string once = gpuvs::to_json_text(run);
  const gpuvs::RunFile again = gpuvs::parse_run_file(once, "roundtrip.json");
  if (!(again == run)) violated("the run read back differs", once.substr(0, 2000));
  const std::string twice = gpuvs::to_json_text(again);
  if (twice != once) violated("the canonical text is not stable", once.substr(0, 2000));
  outputs_of(run);
  return 0;
}
