// Internal to gpuvs_core: the mapping between RunFile and its JSON document
// (run_file_json.cpp), and the helpers (run_file.cpp) that make every run-file error
// message one line of the form "<name>: <field path>: <problem>".
//
// Invariants:
//  - run_to_json writes every field, in the order of the structs in run_file.h (the
//    order docs/results.md lists them); empty optionals become null;
//  - run_from_json is given a document whose top level is an object and whose schema
//    has already been checked; it reads every required field, ignores unknown keys,
//    and throws UsageError naming the first field that is missing, of the wrong type,
//    out of range or against a validation rule;
//  - messages never contain a control character (paths, keys and quoted values are
//    escaped and shortened), so they stay one line whatever the file holds.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/run_file.h"

namespace gpuvs::run_json {

nlohmann::ordered_json run_to_json(const RunFile& run);

RunFile run_from_json(const nlohmann::json& doc, std::string_view name);

// JSON text of a file gpuvs reads (run files, tune files) as a document: step 1 of
// parse_run_file (run_file.cpp), with its limits: no NUL byte, nesting at most 64
// levels, no duplicate key. Throws UsageError "<name>: not valid JSON at byte N: ...".
nlohmann::json parse_json_document(std::string_view text, std::string_view name);

// Appends `.key` to a field path, or `["key"]` (escaped, shortened) when the key is
// not a plain identifier, so that a key holding a newline or 2 MB cannot break the
// one-line message.
void append_key(std::string& path, std::string_view key);

// `s` in double quotes, control characters escaped, cut to `max_bytes` (at a UTF-8
// character boundary) with "..." when longer.
std::string quote(std::string_view s, std::size_t max_bytes = 64);

// `s` with control characters escaped and cut to `max_bytes`, without quotes.
std::string printable(std::string_view s, std::size_t max_bytes);

// nlohmann's exception text without its "[json.exception.parse_error.101] parse error
// at " prefix: "line 1, column 5: syntax error while parsing value - ...".
std::string_view json_error_reason(std::string_view what);

// Throws UsageError("<name>: <path>: <problem>"), or "<name>: <problem>" when the
// path is empty (the problem concerns the whole file).
[[noreturn]] void fail(std::string_view name, std::string_view path, std::string_view problem);

}  // namespace gpuvs::run_json
