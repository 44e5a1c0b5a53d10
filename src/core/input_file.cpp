#include "core/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <system_error>

#include <fmt/format.h>

#include "core/error.h"
#include "core/run_file_json.h"
#include "core/text.h"

namespace gpuvs {

namespace {

std::string errno_text(int err) {
  return std::error_code(err, std::generic_category()).message();
}

// What a file that is neither regular nor a pipe is, for the message.
const char* special_kind(mode_t mode) {
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

std::string mib_text(std::size_t bytes) {
  if (bytes % (std::size_t{1} << 20) == 0) return fmt::format("{} MiB", bytes >> 20);
  return fmt::format("{} bytes", bytes);
}

}  // namespace

std::string read_input_file(const std::filesystem::path& path, const std::string& name,
                            std::string_view what, std::size_t max_bytes) {
  const std::string shown = run_json::printable(name, 4096);
  const auto cannot_read = [&](const std::string& why) {
    throw UsageError(fmt::format("{}: cannot read: {}", shown, why));
  };
  const auto too_large = [&] {
    throw UsageError(fmt::format("{}: file is larger than {}, the limit for a {}", shown,
                                 mib_text(max_bytes), what));
  };
  // O_NONBLOCK: opening a FIFO without a writer would block forever; it is cleared
  // again below for the reads.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) cannot_read(errno_text(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) cannot_read(errno_text(errno));
  if (S_ISDIR(st.st_mode)) cannot_read(errno_text(EISDIR));
  const bool regular = S_ISREG(st.st_mode);
  if (!regular && !S_ISFIFO(st.st_mode))
    cannot_read(fmt::format("it is {}, not a file (give a {})", special_kind(st.st_mode), what));
  if (regular && std::uint64_t(st.st_size) > max_bytes) too_large();
  if (const int flags = ::fcntl(fd, F_GETFL); flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  std::string text;
  if (regular) text.reserve(std::size_t(st.st_size));
  // Read until EOF, not st_size bytes: a pipe reports a size of 0 and a file may
  // grow while it is read. The limit holds for both.
  char buf[1 << 16];
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      cannot_read(errno_text(errno));
    }
    if (n == 0) break;
    if (text.size() + std::size_t(n) > max_bytes) too_large();
    text.append(buf, std::size_t(n));
  }
  return text;
}

std::optional<std::size_t> invalid_utf8_offset(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t len = utf8_length(s, i);
    if (len == 0) return i;
    i += len;
  }
  return std::nullopt;
}

std::optional<TextProblem> find_text_problem(std::string_view text, std::string_view what) {
  const auto line_of = [&](std::size_t offset) {
    return 1 + static_cast<int>(std::count(text.begin(), text.begin() + offset, '\n'));
  };
  if (const std::size_t nul = text.find('\0'); nul != std::string_view::npos)
    return TextProblem{line_of(nul), fmt::format("contains a NUL byte (a {} is text)", what)};
  if (const std::optional<std::size_t> bad = invalid_utf8_offset(text))
    return TextProblem{line_of(*bad),
                       fmt::format("byte 0x{:02x} is not UTF-8 (save the file as UTF-8)",
                                   static_cast<unsigned char>(text[*bad]))};
  return std::nullopt;
}

}  // namespace gpuvs
