// A tuned result in the forms people use it (docs/tune.md#output): a terminal table
// with what each setting rests on, `export` lines a job script sources, a Python dict
// literal a training script loads, and the short form of `gpuvs detect`.
//
// Everything in a TuneDocument may come from a hostile file (--show, the cache):
// table cells and names pass one_line (core/text.h); a shell value is single-quoted
// and only variables with a checked name are exported; Python strings are escaped to
// ASCII. No output depends on a GPU's name.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "tune/cache.h"
#include "tune/tune_result.h"

namespace gpuvs::tune {

enum class EmitFormat { kTable, kEnv, kPython };

std::optional<EmitFormat> emit_format_from_string(std::string_view s);

// Per GPU: a header (name, uuid, date, run file, what was asked), the settings
// (scope | setting | value | why | rests on), the caveats and the absent sections.
std::string render_tune_table(const TuneDocument& doc);

// `export NAME='VALUE'` for each setting applied through an environment variable,
// after comment lines saying what the file is. A variable that two settings (of one
// GPU or of several) set to different values is not exported: a comment says so.
std::string render_tune_env(const TuneDocument& doc);

// One Python dict literal (ast.literal_eval reads it): schema, and per device its
// identity, the settings nested by scope and keyed by key, the environment variables
// (those render_tune_env would export for it alone) and the absent sections.
std::string render_tune_python(const TuneDocument& doc);

// A value in Python syntax: "\"bf16\"" (ASCII, escaped), 856, 1.1 (a float always
// reads back as a float), True.
std::string python_literal(const ParamValue& v);
std::string python_string(std::string_view s);

// `gpuvs detect`'s lines for GPU `gpu` after a cache lookup: the cached settings one
// per line (scope key = value, why) with the date and the run file, or why there are
// none ("not tuned: run gpuvs tune", "stale: ... : run gpuvs tune").
std::string render_detect_entry(int gpu, const Lookup& found);

}  // namespace gpuvs::tune
