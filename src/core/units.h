// Formatting of values in base SI units for people: decimal prefixes only
// (GB/s = 1e9 B/s, TFLOP/s = 1e12 FLOP/s), as DESIGN.md requires. Byte *sizes*
// of buffers are shown in binary units (MiB, GiB) since that is how they are
// allocated; the two are never mixed in one figure.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace gpuvs {

// "4.31 TB/s", "785 TFLOP/s", "15.2 µs", "55.5 GB/s". `digits` significant digits.
std::string format_si(double value, std::string_view unit, int digits = 3);

// "4 GiB", "1.5 MiB", "512 B".
std::string format_bytes_binary(int64_t bytes);

// Parse a size given by a user: "4GiB", "512MiB", "1e9", "2GB", "4096" (bytes).
// Returns -1 when the text is not a size.
int64_t parse_size(std::string_view text);

}  // namespace gpuvs
