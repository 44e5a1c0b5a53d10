// write_file_atomically: see atomic_file.h for the contract.
#include "core/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <random>
#include <string>
#include <system_error>

#include <fmt/format.h>

#include "core/error.h"
#include "core/run_file_json.h"

namespace gpuvs {

namespace {

// The longest file name part of a temporary name: with the rest (".", ".gpuvs-tmp.",
// a pid, ".", 16 digits) it stays below NAME_MAX (255) on every file system.
constexpr std::size_t kMaxNameBytes = 200;
constexpr int kNameAttempts = 100;

std::string errno_text(int err) {
  return std::error_code(err, std::generic_category()).message();
}

uint64_t random_u64() {
  try {
    std::random_device rd;
    return (uint64_t(rd()) << 32) ^ rd();
  } catch (const std::exception&) {
    // No entropy source: the pid in the name and O_EXCL still keep writers apart.
    return uint64_t(std::chrono::steady_clock::now().time_since_epoch().count());
  }
}

// 0 when all of `data` was written, else the errno of the failing write.
int write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    data.remove_prefix(std::size_t(n));
  }
  return 0;
}

int fsync_retrying(int fd) {
  while (::fsync(fd) != 0) {
    if (errno != EINTR) return errno;
  }
  return 0;
}

// The reason, in words, why `folder` cannot hold the file, or "" when it is a folder.
std::string folder_problem(const std::filesystem::path& folder) {
  struct stat st {};
  if (::stat(folder.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return {};
    return fmt::format("{} is not a directory", run_json::printable(folder.string(), 4096));
  }
  if (errno == ENOENT)
    return fmt::format("directory {} does not exist", run_json::printable(folder.string(), 4096));
  if (errno == ENOTDIR)
    return fmt::format("{} is not a directory", run_json::printable(folder.string(), 4096));
  return errno_text(errno);
}

// Why `path` itself cannot be replaced (step 1 of the contract), or "": a symbolic
// link, a directory, not a regular file, or the way to its folder is wrong.
std::string target_problem(const std::filesystem::path& path) {
  const std::string name = path.filename().string();
  if (name.empty() || name == "." || name == "..") return errno_text(EISDIR);
  const std::filesystem::path folder = path.has_parent_path() ? path.parent_path() : ".";
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (S_ISLNK(st.st_mode))
      return "it is a symbolic link (gpuvs does not write through links; remove it or write "
             "elsewhere)";
    if (S_ISDIR(st.st_mode)) return errno_text(EISDIR);
    if (!S_ISREG(st.st_mode)) return "it is not a regular file";
  } else if (errno != ENOENT) {
    // ENOTDIR, ELOOP, EACCES on the way to the folder: name the folder when it is
    // the folder that is wrong.
    const int err = errno;
    const std::string problem = folder_problem(folder);
    return problem.empty() ? errno_text(err) : problem;
  }
  return {};
}

}  // namespace

std::string folder_write_problem(const std::filesystem::path& folder, bool made_later) {
  std::filesystem::path at = folder.empty() ? "." : folder;
  if (made_later) {
    // The nearest folder that exists must let the missing ones be made in it.
    std::error_code ec;
    while (!std::filesystem::exists(at, ec) && at.has_parent_path() && at != at.parent_path())
      at = at.parent_path();
    if (!std::filesystem::exists(at, ec)) at = ".";
  }
  if (std::string problem = folder_problem(at); !problem.empty()) return problem;
  if (::access(at.c_str(), W_OK | X_OK) != 0) {
    return fmt::format("{}: {}", run_json::printable(at.string(), 4096), errno_text(errno));
  }
  return {};
}

std::string write_problem(const std::filesystem::path& path, bool folder_made_later) {
  if (std::string problem = target_problem(path); !problem.empty()) return problem;
  return folder_write_problem(path.has_parent_path() ? path.parent_path() : ".", folder_made_later);
}

void write_file_atomically(const std::filesystem::path& path, std::string_view content,
                           std::string_view what, Sync sync) {
  const std::string shown = run_json::printable(path.string(), 4096);
  const auto fail = [&](const std::string& reason) {
    throw Error(what.empty() ? fmt::format("cannot write {}: {}", shown, reason)
                             : fmt::format("cannot write {} {}: {}", what, shown, reason));
  };

  if (const std::string problem = target_problem(path); !problem.empty()) fail(problem);
  const std::string name = path.filename().string();
  const std::filesystem::path folder = path.has_parent_path() ? path.parent_path() : ".";

  // The temporary name holds the start of the file's name, cut where no UTF-8
  // character is split.
  std::size_t keep = std::min(name.size(), kMaxNameBytes);
  while (keep > 0 && keep < name.size() && (static_cast<unsigned char>(name[keep]) & 0xC0) == 0x80)
    --keep;
  const std::string_view head = std::string_view(name).substr(0, keep);
  std::filesystem::path tmp;
  int fd = -1;
  int err = 0;
  for (int attempt = 0; attempt < kNameAttempts && fd < 0; ++attempt) {
    tmp = path.parent_path() /
          fmt::format(".{}.gpuvs-tmp.{}.{:016x}", head, ::getpid(), random_u64());
    do {
      fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    } while (fd < 0 && errno == EINTR);
    err = fd < 0 ? errno : 0;
    if (fd < 0 && err != EEXIST) break;
  }
  if (fd < 0) {
    const std::string problem = err == ENOENT || err == ENOTDIR ? folder_problem(folder) : "";
    fail(problem.empty() ? errno_text(err) : problem);
  }

  const auto remove_and_fail = [&](int e) {
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    fail(errno_text(e));
  };
  if (const int e = write_all(fd, content)) remove_and_fail(e);
  if (sync == Sync::kDurable)
    if (const int e = fsync_retrying(fd)) remove_and_fail(e);
  // Linux frees the descriptor even when close reports EINTR (and with kDurable the
  // data is on disk already): only other errors count.
  const int closed = ::close(fd);
  fd = -1;
  if (closed != 0 && errno != EINTR) remove_and_fail(errno);
  if (::rename(tmp.c_str(), path.c_str()) != 0) remove_and_fail(errno);

  // Make the rename itself durable; a failure here cannot undo it, so it is ignored.
  if (sync != Sync::kDurable) return;
  if (const int dfd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dfd >= 0) {
    fsync_retrying(dfd);
    ::close(dfd);
  }
}

}  // namespace gpuvs
