// The output step of gpuvs, driven by the fuzzers with what a loader accepted:
// compare and claims in every format (terminal text, Markdown, CSV, JSON), the HTML
// report, and the advisor's table, text and JSON. For an accepted input nothing here
// may throw: an exception is a class of input the loader let through that an output
// cannot carry (text that is not UTF-8, a number no format can print), reported as a
// crash with its message. JSON outputs must also parse back and dump strictly, as
// `gpuvs compare --json` does with them.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "advise/advisor.h"
#include "advise/output.h"
#include "core/error.h"
#include "core/input_file.h"
#include "report/claims.h"
#include "report/compare.h"
#include "report/html.h"
#include "report/render.h"
#include "specs/published.h"

namespace gpuvs_fuzz {

// Runs `step`; any exception is a bug, reported and turned into a crash.
template <class Step>
void must_not_throw(const char* fuzzer, const char* what, Step&& step) {
  try {
    step();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s threw for an accepted input: %s\n", fuzzer, what, e.what());
    std::abort();
  }
}

// A loader's refusal of the file `name`: a usage error (exit 2) of one line that starts
// with the name. Anything else is a bug, reported and turned into a crash.
inline void check_usage_error(const char* fuzzer, const gpuvs::Error& e, std::string_view name) {
  const std::string msg = e.what();
  const bool ok = e.code() == gpuvs::ExitCode::kUsage && msg.rfind(name, 0) == 0 &&
                  msg.find('\n') == std::string::npos;
  if (!ok) {
    std::fprintf(stderr, "%s: bad error for %.*s: %s\n", fuzzer, int(name.size()), name.data(),
                 msg.c_str());
    std::abort();
  }
}

// Every output is UTF-8 (the loaders' inputs are, and a terminal, a Markdown viewer
// or a spreadsheet shows anything else as garbage): an output that is not comes from
// text a loader let through. A failure throws, so must_not_throw reports it.
inline void utf8_output(const std::string& text) {
  if (const auto bad = gpuvs::invalid_utf8_offset(text))
    throw std::runtime_error("output is not UTF-8 at byte " + std::to_string(*bad));
}

// JSON text as `compare --json` treats it: parsed, then dumped without replacement.
inline void reparse_json(const std::string& text) {
  utf8_output(text);
  (void)nlohmann::json::parse(text).dump(2);
}

// Claims the fuzzers judge against what they loaded: every kind of reference (a
// datasheet figure, a measurement, a model throughput, an unknown GPU).
inline std::vector<gpuvs::Claim> sample_claims() {
  return gpuvs::parse_claims(
      "gpu,metric,value,unit,source,precision,setting\n"
      "H200,memory bandwidth,4.8,TB/s,https://example.com,,\n"
      "H200 96GB,fp16,989,TFLOPS,slide,,\n"
      "A100,resnet-50 training,2470,img/s,article,mixed fp16,batch 256\n"
      "TEST-GPU,fp32,1,TFLOP/s,-,,\n",
      "fuzz-claims.csv");
}

inline void render_all(const char* fuzzer, const std::vector<gpuvs::CompareInput>& inputs,
                       const std::vector<const gpuvs::RunFile*>& runs,
                       const std::vector<gpuvs::ClaimJudgement>* claims,
                       const gpuvs::Catalogue& catalogue) {
  using gpuvs::TextFormat;
  std::optional<gpuvs::Comparison> comparison;
  if (!inputs.empty()) {
    must_not_throw(fuzzer, "build_comparison", [&] {
      comparison = gpuvs::build_comparison(inputs, catalogue, gpuvs::Published::builtin(),
                                           gpuvs::CompareOptions{});
    });
  }
  for (TextFormat f :
       {TextFormat::kTerminal, TextFormat::kMarkdown, TextFormat::kCsv, TextFormat::kJson}) {
    if (comparison) {
      must_not_throw(fuzzer, "render_comparison", [&] {
        const std::string text = gpuvs::render_comparison(*comparison, f);
        utf8_output(text);
        if (f == TextFormat::kJson) reparse_json(text);
      });
      must_not_throw(fuzzer, "render_headline", [&] {
        if (f != TextFormat::kCsv && f != TextFormat::kJson)
          utf8_output(gpuvs::render_headline(*comparison, f));
      });
    }
    if (claims) {
      must_not_throw(fuzzer, "render_claims", [&] {
        const std::string text = gpuvs::render_claims(*claims, f);
        utf8_output(text);
        if (f == TextFormat::kJson) reparse_json(text);
      });
    }
  }
  gpuvs::HtmlReportInput report;
  report.title = "fuzz";
  if (comparison) report.comparison = &*comparison;
  report.runs = runs;
  report.claims = claims;
  // Without the chart library: the page is the same apart from the inlined script.
  must_not_throw(fuzzer, "render_html", [&] { utf8_output(gpuvs::render_html(report, "")); });
}

// The advisor over `catalogue` (and the measurements and prices given): a usage
// error of advise() itself is an answer (a catalogue without a usable GPU); its
// rendering must not throw.
inline void advise_all(const char* fuzzer, const gpuvs::Catalogue& catalogue,
                       const gpuvs::advise::Measurements& measured,
                       const gpuvs::advise::Prices* prices) {
  using namespace gpuvs::advise;
  for (Mode mode : {Mode::kTrain, Mode::kInfer}) {
    std::optional<Advice> advice;
    try {
      Request request;
      request.mode = mode;
      request.model = resolve_model("7B", {});
      advice = advise(request, catalogue, measured, prices);
    } catch (const gpuvs::Error& e) {
      if (e.code() != gpuvs::ExitCode::kUsage) {
        std::fprintf(stderr, "%s: advise failed: %s\n", fuzzer, e.what());
        std::abort();
      }
      continue;
    }
    must_not_throw(fuzzer, "advise output", [&] {
      utf8_output(render_title(*advice));
      for (const auto& row : ranking_table(*advice).rows)
        for (const std::string& cell : row)
          utf8_output(cell);
      utf8_output(render_below_table(*advice, true));
      utf8_output(bases_line(*advice));
      reparse_json(render_json(*advice));
    });
  }
}

}  // namespace gpuvs_fuzz
