// The tune cache: one file per GPU, `<dir>/<uuid>.json`, holding a gpuvs.tune/1
// document with that GPU's one DeviceTune (docs/tune.md#the-cache).
//
// An entry answers a request only when its fingerprint equals the GPU's now (every
// field: fingerprint.h) and it covers the request (covers_problem). A file that cannot
// be read as such an entry (bad JSON, another schema, another GPU's uuid inside, a
// directory, a huge file) is "corrupt": reported in one line and treated as missing,
// never a crash and never an answer. A cache that cannot be written is a warning: the
// caller still prints what it measured.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tune/fingerprint.h"
#include "tune/tune_result.h"

namespace gpuvs::tune {

// The environment, as a lookup, so that tests need no setenv.
using EnvLookup = std::function<std::optional<std::string>(const char* name)>;
EnvLookup process_environment();

// `given` (--cache DIR) when set; else $XDG_CACHE_HOME/gpuvs/tune when XDG_CACHE_HOME
// is set and absolute (the XDG spec ignores a relative one); else
// $HOME/.cache/gpuvs/tune. Neither: UsageError telling to pass --cache DIR.
std::filesystem::path default_cache_dir(const std::optional<std::filesystem::path>& given,
                                        const EnvLookup& env);

// "<uuid>.json", or nullopt when the uuid is empty or has a character other than
// [A-Za-z0-9_-] (it would name another file, or a file elsewhere).
std::optional<std::string> cache_file_name(const std::string& uuid);

// Why `have` (a cached entry's request) does not answer `want`, one line, or nullopt
// when it does: it has every model and GEMM shape asked, the same headroom and global
// batch, and it is a full pass or the request is a quick one.
std::optional<std::string> covers_problem(const TuneRequest& have, const TuneRequest& want);

struct Lookup {
  enum class Kind { kHit, kMissing, kStale, kNotCovering, kCorrupt };
  Kind kind = Kind::kMissing;
  std::filesystem::path file;
  std::optional<DeviceTune> entry;   // hit, stale, not covering
  std::vector<FieldChange> changes;  // stale: every field that changed
  std::string why;                   // not covering, corrupt, missing: one line
};

// The entry for `now` in `dir`. Without `request` (gpuvs detect) any entry with the
// same fingerprint is a hit.
Lookup lookup(const std::filesystem::path& dir, const Fingerprint& now,
              const std::optional<TuneRequest>& request);

// "stale: driver_version changed: 580.95.05 → 580.159.04", "not tuned",
// "not covering: ...", "cache entry unreadable: ...": one line (a hit: "cached").
std::string describe(const Lookup& found);

// Writes `tune` as `dir`/<uuid>.json (the folders made as needed), atomically. A
// failure is returned as one warning line, never thrown.
std::optional<std::string> save(const std::filesystem::path& dir, const DeviceTune& tune);

// Every valid entry of `dir`, by uuid; each file that is not one is a warning line.
// A missing folder is an empty cache.
struct CachedEntries {
  std::vector<DeviceTune> entries;
  std::vector<std::string> warnings;
};
CachedEntries list_cached(const std::filesystem::path& dir);

}  // namespace gpuvs::tune
