// A tuned result as JSON, schema gpuvs.tune/1 (docs/tune.md lists every field): the
// document of `gpuvs tune --json` and of a cache file.
//
// Writing: every field, in the order of tune_result.h; an absent optional is null; a
// setting's value in its own JSON type (true, 856, 1.12, "bf16"), so that it reads back
// as the same ParamValue alternative (an integer stays an integer).
// Reading is strict, as for run files (core/run_file_json.cpp): the file through
// core/input_file (at most 1 MiB), JSON syntax with the run files' limits (no NUL, no
// duplicate key, 64 levels), the schema first (a run file or another tool's JSON is
// named as not a tune file), then every field required and of its type; an optional
// may be null. Every failure is one UsageError line: "<name>: <field path>: <problem>".
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "tune/tune_result.h"

namespace gpuvs::tune {

nlohmann::ordered_json tune_to_json(const TuneDocument& doc);

// The canonical text: 2-space indent, trailing newline.
std::string to_json_text(const TuneDocument& doc);

TuneDocument parse_tune_document(std::string_view text, std::string_view name);

// read_input_file (kMaxTuneFileBytes) then parse_tune_document, `path` as the name.
TuneDocument load_tune_file(const std::filesystem::path& path);

// An environment variable's name as a setting may carry one: [A-Z_][A-Z0-9_]*.
bool is_env_name(std::string_view name);

}  // namespace gpuvs::tune
