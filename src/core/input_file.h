// The one reader of every file a user hands gpuvs (run files, catalogues, published
// figures, claims, prices): the whole file, bounded, so that hostile input cannot
// exhaust memory or hang on something that is not a file; and the UTF-8 check that
// text read from such a file passes before it can reach JSON output.
//
// Invariants: a file larger than its limit is refused before more than the limit is
// held in memory; a directory, a character or block device (/dev/zero, a terminal)
// or a socket is refused without reading it; a pipe (`<(cmd)`, a FIFO) is read to its
// end, bounded like a file. Every failure is one UsageError line starting with the
// file's name (control characters escaped).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace gpuvs {

// The limits of docs/results.md and docs/catalogue.md, one per kind of file.
inline constexpr std::size_t kMaxRunFileBytes = std::size_t{256} << 20;
inline constexpr std::size_t kMaxCatalogueBytes = std::size_t{16} << 20;
inline constexpr std::size_t kMaxClaimsBytes = std::size_t{1} << 20;
inline constexpr std::size_t kMaxPricesBytes = std::size_t{1} << 20;
// A `gpuvs tune` result (docs/tune.md): a cache entry or a --show file.
inline constexpr std::size_t kMaxTuneFileBytes = std::size_t{1} << 20;

// The whole file at `path`, named `name` in messages. `what` names the kind of file
// in them: "<name>: file is larger than 1 MiB, the limit for a claims file".
std::string read_input_file(const std::filesystem::path& path, const std::string& name,
                            std::string_view what, std::size_t max_bytes);

// The offset of the first byte of `s` that does not start a well-formed UTF-8
// character (utf8_length of core/text.h); nullopt when all of `s` is UTF-8.
std::optional<std::size_t> invalid_utf8_offset(std::string_view s);

// Why `text`, a file of lines (claims, prices), is not text that gpuvs can carry to
// every output: a NUL byte, or a byte that is not UTF-8 (a Latin-1 file). The line
// (from 1) and the problem, one line: "byte 0xe9 is not UTF-8 (save the file as
// UTF-8)"; nullopt when the text is fine. `what` names the kind of file.
struct TextProblem {
  int line = 0;
  std::string problem;
};
std::optional<TextProblem> find_text_problem(std::string_view text, std::string_view what);

}  // namespace gpuvs
