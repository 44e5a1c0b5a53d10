// libFuzzer target for `gpuvs import`: the first input byte picks the tool (nccl-tests,
// nvbench, nvbandwidth), the rest is the file. Every input must either import or throw
// gpuvs::Error with exit code 2 and one line naming the file. What imports must be a
// run file that reads back as written (the import writes only what the run-file
// reader accepts), and then goes through the output step (render_outputs.h): compare,
// the HTML report and the advisor in every format, none of which may throw.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/error.h"
#include "import/import.h"
#include "render_outputs.h"

namespace {

constexpr const char* kFuzzer = "fuzz_import";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const char* tools[] = {"nccl-tests", "nvbench", "nvbandwidth"};
  gpuvs::import::ImportOptions options;
  options.tool = tools[data[0] % 3];
  const std::string name = options.tool == "nccl-tests" ? "all_reduce.log" : "tool.json";
  const gpuvs::import::NamedText file{
      name, std::string(reinterpret_cast<const char*>(data) + 1, size - 1)};
  gpuvs::Meta meta;
  meta.tool_version = "0.1.0";
  meta.git_sha = "unknown";
  meta.command = "import";
  meta.started_at = "2026-12-01T09:00:00Z";
  gpuvs::RunFile run;
  try {
    run = gpuvs::import::import_texts(options, {file}, meta).run;
  } catch (const gpuvs::Error& e) {
    gpuvs_fuzz::check_usage_error(kFuzzer, e, name);
    return 0;
  }
  gpuvs::RunFile back;
  gpuvs_fuzz::must_not_throw(kFuzzer, "reading the imported run back", [&] {
    back = gpuvs::parse_run_file(gpuvs::to_json_text(run), "imported.json");
  });
  if (!(back == run)) {
    std::fprintf(stderr, "%s: the imported run does not read back as written\n", kFuzzer);
    std::abort();
  }
  std::vector<gpuvs::CompareInput> inputs;
  for (const gpuvs::GpuInfo& g : back.system.gpus) {
    if (inputs.size() == 2) break;
    gpuvs::CompareInput in;
    in.run = &back;
    in.gpu_index = g.index;
    inputs.push_back(in);
  }
  gpuvs_fuzz::render_all(kFuzzer, inputs, {&back}, nullptr, gpuvs::Catalogue::builtin());
  return 0;
}
