#include "tune/cache.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <system_error>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/run_file_json.h"
#include "core/text.h"
#include "tune/tune_json.h"

namespace gpuvs::tune {

namespace fs = std::filesystem;

namespace {

std::string shown_path(const fs::path& p) {
  return run_json::printable(p.string(), 4096);
}

std::string joined(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& p : parts)
    out += (out.empty() ? "" : ", ") + one_line(p);
  return out.empty() ? "none" : out;
}

std::string batch_text(const std::optional<int64_t>& b) {
  return b ? std::to_string(*b) : "none";
}

// The entry a file holds for the GPU `uuid`: the document must hold exactly one
// device, that GPU. Throws UsageError (a file that is not one) with the reason.
DeviceTune read_entry(const fs::path& file, const std::string& uuid) {
  TuneDocument doc = load_tune_file(file);
  if (doc.devices.size() != 1)
    throw UsageError(fmt::format("{}: holds {} devices, a cache entry holds one", shown_path(file),
                                 doc.devices.size()));
  if (doc.devices[0].fingerprint.uuid != uuid)
    throw UsageError(fmt::format("{}: holds the result of {}, not of {}", shown_path(file),
                                 run_json::quote(doc.devices[0].fingerprint.uuid),
                                 run_json::quote(uuid)));
  return std::move(doc.devices[0]);
}

}  // namespace

EnvLookup process_environment() {
  return [](const char* name) -> std::optional<std::string> {
    const char* v = std::getenv(name);
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
}

fs::path default_cache_dir(const std::optional<fs::path>& given, const EnvLookup& env) {
  if (given) return *given;
  if (const auto xdg = env("XDG_CACHE_HOME"); xdg && !xdg->empty() && fs::path(*xdg).is_absolute())
    return fs::path(*xdg) / "gpuvs" / "tune";
  if (const auto home = env("HOME"); home && !home->empty())
    return fs::path(*home) / ".cache" / "gpuvs" / "tune";
  throw UsageError(
      "no tune cache folder: neither XDG_CACHE_HOME (absolute) nor HOME is set; pass --cache DIR");
}

std::optional<std::string> cache_file_name(const std::string& uuid) {
  if (uuid.empty() || uuid.size() > 128) return std::nullopt;
  for (char c : uuid) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_';
    if (!ok) return std::nullopt;
  }
  return uuid + ".json";
}

std::optional<std::string> covers_problem(const TuneRequest& have, const TuneRequest& want) {
  const auto lacks = [](const std::vector<std::string>& set, const std::string& item) {
    return std::find(set.begin(), set.end(), item) == set.end();
  };
  for (const std::string& m : want.models)
    if (lacks(have.models, m))
      return fmt::format("model {} was not tuned (cached: {})", one_line(m), joined(have.models));
  for (const std::string& g : want.gemm_shapes)
    if (lacks(have.gemm_shapes, g))
      return fmt::format("GEMM {} was not measured (cached: {})", one_line(g),
                         joined(have.gemm_shapes));
  // Both come from the same parser or the same JSON text: equal values are equal bits.
  if (have.headroom != want.headroom)
    return fmt::format("headroom {} asked, {} cached", want.headroom, have.headroom);
  if (have.global_batch != want.global_batch)
    return fmt::format("global batch {} asked, {} cached", batch_text(want.global_batch),
                       batch_text(have.global_batch));
  if (have.quick && !want.quick) return std::string("a full pass asked, the cached one is --quick");
  return std::nullopt;
}

Lookup lookup(const fs::path& dir, const Fingerprint& now,
              const std::optional<TuneRequest>& request) {
  Lookup found;
  const auto name = cache_file_name(now.uuid);
  if (!name) {
    found.why = fmt::format("GPU uuid {} cannot name a cache file", run_json::quote(now.uuid));
    return found;
  }
  found.file = dir / *name;
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(found.file, ec);
  if (ec || st.type() == fs::file_type::not_found) {
    found.why = "not tuned";
    if (ec && ec != std::errc::no_such_file_or_directory) {
      found.kind = Lookup::Kind::kCorrupt;
      found.why = fmt::format("{}: {}", shown_path(found.file), ec.message());
    }
    return found;
  }
  try {
    found.entry = read_entry(found.file, now.uuid);
  } catch (const Error& e) {
    found.kind = Lookup::Kind::kCorrupt;
    found.why = e.what();
    return found;
  }
  found.changes = changed_fields(found.entry->fingerprint, now);
  if (!found.changes.empty()) {
    found.kind = Lookup::Kind::kStale;
    return found;
  }
  if (request) {
    if (auto problem = covers_problem(found.entry->request, *request)) {
      found.kind = Lookup::Kind::kNotCovering;
      found.why = *problem;
      return found;
    }
  }
  found.kind = Lookup::Kind::kHit;
  return found;
}

std::string describe(const Lookup& found) {
  switch (found.kind) {
    case Lookup::Kind::kHit:
      return "cached";
    case Lookup::Kind::kMissing:
      return found.why.empty() ? "not tuned" : one_line(found.why);
    case Lookup::Kind::kStale: {
      std::string out = "stale: ";
      for (std::size_t i = 0; i < found.changes.size(); ++i)
        out += (i ? "; " : "") + tune::describe(found.changes[i]);
      return out;
    }
    case Lookup::Kind::kNotCovering:
      return "not covering: " + one_line(found.why);
    case Lookup::Kind::kCorrupt:
      return "cache entry unreadable: " + one_line(found.why);
  }
  return "not tuned";
}

std::optional<std::string> save(const fs::path& dir, const DeviceTune& tune) {
  const auto name = cache_file_name(tune.fingerprint.uuid);
  if (!name)
    return fmt::format("not cached: GPU uuid {} cannot name a cache file",
                       run_json::quote(tune.fingerprint.uuid));
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    return fmt::format("not cached: cannot create the tune cache folder {}: {}", shown_path(dir),
                       ec.message());
  TuneDocument doc;
  doc.devices.push_back(tune);
  try {
    write_file_atomically(dir / *name, to_json_text(doc), "the tune cache entry");
  } catch (const Error& e) {
    return fmt::format("not cached: {}", e.what());
  }
  return std::nullopt;
}

CachedEntries list_cached(const fs::path& dir) {
  CachedEntries out;
  std::error_code ec;
  if (!fs::exists(dir, ec)) return out;
  fs::directory_iterator it(dir, ec);
  if (ec) {
    out.warnings.push_back(
        fmt::format("cannot list the tune cache {}: {}", shown_path(dir), ec.message()));
    return out;
  }
  std::vector<fs::path> files;
  for (const fs::directory_entry& e : it) {
    const std::string name = e.path().filename().string();
    // Leftovers of an interrupted atomic write start with '.'; they are never read.
    if (name.empty() || name[0] == '.' || e.path().extension() != ".json") continue;
    files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  for (const fs::path& f : files) {
    try {
      out.entries.push_back(read_entry(f, f.stem().string()));
    } catch (const Error& e) {
      out.warnings.push_back(fmt::format("skipped: {}", e.what()));
    }
  }
  return out;
}

}  // namespace gpuvs::tune
