// write_file_atomically (core/atomic_file.h), the writer of every file gpuvs writes:
// content replaced, mode 0644 less the umask, symbolic links refused with their
// target untouched, failures (a file size limit, a folder without write permission)
// leaving the old file whole and no temporary file, a SIGKILL at any moment leaving
// one of two complete contents, and racing writers leaving one complete content.
#include <grp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "core/atomic_file.h"
#include "core/error.h"
#include "scratch_dir_test.h"

namespace gpuvs {
namespace {

namespace fs = std::filesystem;
using Names = std::vector<std::string>;

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_bytes(const fs::path& p, std::string_view data) {
  std::ofstream out(p, std::ios::binary);
  out.write(data.data(), std::streamsize(data.size()));
}

Names list_dir(const fs::path& dir) {
  Names names;
  for (const auto& e : fs::directory_iterator(dir))
    names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

mode_t mode_of(const fs::path& p) {
  struct stat st {};
  if (::lstat(p.c_str(), &st) != 0) return 0;
  return st.st_mode & 07777;
}

// Sets the umask for the scope, then puts the old one back.
class ScopedUmask {
 public:
  explicit ScopedUmask(mode_t mask) : old_(::umask(mask)) {}
  ~ScopedUmask() { ::umask(old_); }
  ScopedUmask(const ScopedUmask&) = delete;
  ScopedUmask& operator=(const ScopedUmask&) = delete;

 private:
  mode_t old_;
};

// A content that checks itself: a header naming its tag, numbered lines of
// pseudo-random digits, a trailer with the tag and the number of lines. Two tags
// give two contents that differ from their first line on.
std::string make_content(char tag, std::size_t min_bytes) {
  std::mt19937_64 rng(static_cast<uint64_t>(tag));
  std::string text = fmt::format("gpuvs atomic-file test content {}\n", tag);
  text.reserve(min_bytes + 256);
  uint64_t lines = 0;
  while (text.size() < min_bytes)
    text += fmt::format("{} {:08} {:016x}{:016x}\n", tag, lines++, rng(), rng());
  text += fmt::format("end of content {}, {} lines\n", tag, lines);
  return text;
}

// What a file that is neither expected content holds, for the failure message.
std::string describe(const std::string& got, const std::string& a, const std::string& b) {
  if (got.empty()) return "the file is empty";
  const auto common = [&](const std::string& want) {
    return std::size_t(
        std::mismatch(got.begin(), got.begin() + std::min(got.size(), want.size()), want.begin())
            .first -
        got.begin());
  };
  const auto shown = [](std::string s) {
    for (std::size_t i = 0; (i = s.find('\n', i)) != std::string::npos;)
      s.replace(i, 1, "\\n");
    return s;
  };
  return fmt::format(
      "{} bytes (A has {}, B {}); the first {} bytes are A's, the first {} B's; it starts "
      "with \"{}\" and ends with \"{}\"",
      got.size(), a.size(), b.size(), common(a), common(b), shown(got.substr(0, 32)),
      shown(got.substr(got.size() - std::min<std::size_t>(got.size(), 40))));
}

// Asserts that `f` throws gpuvs::Error (exit code 1, not a usage error) with one
// line, and returns the line.
template <class F>
std::string write_error(F f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kFailure) << e.what();
    const std::string msg = e.what();
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    return msg;
  }
  ADD_FAILURE() << "no gpuvs::Error thrown";
  return {};
}

// Runs `f` in a forked child and returns what it said: its result, or
// "error: <message>" when it threw gpuvs::Error. Lets a test change process-wide
// limits (RLIMIT_FSIZE, the user id) without changing them for the other tests.
struct ChildSaid {
  int status = -1;
  std::string text;
};

ChildSaid in_child(const std::function<std::string()>& f) {
  int fds[2];
  if (::pipe(fds) != 0) return {};
  const pid_t pid = ::fork();
  if (pid < 0) return {};
  if (pid == 0) {
    ::close(fds[0]);
    std::string text;
    int code = 0;
    try {
      text = f();
    } catch (const Error& e) {
      text = std::string("error: ") + e.what();
      code = 1;
    } catch (...) {
      text = "some other exception";
      code = 2;
    }
    for (std::string_view left = text; !left.empty();) {
      const ssize_t n = ::write(fds[1], left.data(), left.size());
      if (n <= 0) break;
      left.remove_prefix(std::size_t(n));
    }
    ::_exit(code);
  }
  ::close(fds[1]);
  ChildSaid said;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;)
    said.text.append(buf, std::size_t(n));
  ::close(fds[0]);
  ::waitpid(pid, &said.status, 0);
  return said;
}

class AtomicFile : public gpuvs_test::ScratchDirTest {
 protected:
  AtomicFile() : ScratchDirTest("gpuvs_test_atomic_file") {}
};

TEST_F(AtomicFile, WritesAndReplacesTheContent) {
  const fs::path path = dir_ / "compare.md";
  write_file_atomically(path, "first, a longer content\n");
  EXPECT_EQ(read_bytes(path), "first, a longer content\n");
  write_file_atomically(path, "second\n");  // shorter: nothing of the first is left
  EXPECT_EQ(read_bytes(path), "second\n");
  write_file_atomically(path, "");
  EXPECT_TRUE(fs::is_regular_file(path));
  EXPECT_EQ(fs::file_size(path), 0u);
  const std::string big = make_content('X', 1 << 20);
  write_file_atomically(path, big);
  EXPECT_EQ(read_bytes(path), big);
  EXPECT_EQ(list_dir(dir_), Names{"compare.md"});
}

// Without the fsyncs (a file rewritten every fraction of a second) the replacement is
// still whole and the same rules hold.
TEST_F(AtomicFile, AtomicOnlyReplacesWholeUnderTheSameRules) {
  const fs::path path = dir_ / "gpuvs.prom";
  for (int i = 0; i < 50; ++i) {
    const std::string content = make_content(static_cast<char>('a' + i % 26), 4096 + i);
    write_file_atomically(path, content, {}, Sync::kAtomicOnly);
    ASSERT_EQ(read_bytes(path), content) << i;
  }
  EXPECT_EQ(list_dir(dir_), Names{"gpuvs.prom"});
  write_bytes(dir_ / "target", "keep");
  fs::create_symlink(dir_ / "target", dir_ / "link.prom");
  EXPECT_THROW(write_file_atomically(dir_ / "link.prom", "x", {}, Sync::kAtomicOnly), Error);
  EXPECT_EQ(read_bytes(dir_ / "target"), "keep");
}

TEST_F(AtomicFile, WithoutAFolderWritesToTheCurrentDirectory) {
  const fs::path old_cwd = fs::current_path();
  fs::current_path(dir_);
  write_file_atomically("plain.txt", "here\n");
  fs::current_path(old_cwd);
  EXPECT_EQ(read_bytes(dir_ / "plain.txt"), "here\n");
  EXPECT_EQ(list_dir(dir_), Names{"plain.txt"});
}

TEST_F(AtomicFile, ANameNearTheLimitStillGetsATemporaryFile) {
  // 250 bytes: the temporary name would be too long if it held all of it.
  const std::string name = std::string(245, 'n') + ".json";
  write_file_atomically(dir_ / name, "long\n");
  EXPECT_EQ(read_bytes(dir_ / name), "long\n");
  EXPECT_EQ(list_dir(dir_), Names{name});
}

TEST_F(AtomicFile, ModeIs0644LessTheUmask) {
  const fs::path path = dir_ / "report.html";
  for (const mode_t mask : {mode_t(022), mode_t(077), mode_t(027), mode_t(0)}) {
    const ScopedUmask scoped(mask);
    fs::remove(path);
    write_file_atomically(path, "new");
    EXPECT_EQ(mode_of(path), 0644 & ~mask) << std::oct << "umask " << mask;
    // Replacing a file gives the new file the same mode, whatever the old one had.
    ASSERT_EQ(::chmod(path.c_str(), 0600), 0);
    write_file_atomically(path, "again");
    EXPECT_EQ(mode_of(path), 0644 & ~mask) << std::oct << "umask " << mask;
    EXPECT_EQ(read_bytes(path), "again");
  }
}

TEST_F(AtomicFile, OtherHardLinksKeepTheOldContent) {
  const fs::path path = dir_ / "run.json";
  write_bytes(path, "old");
  fs::create_hard_link(path, dir_ / "other-link.json");
  write_file_atomically(path, "new");
  EXPECT_EQ(read_bytes(path), "new");
  EXPECT_EQ(read_bytes(dir_ / "other-link.json"), "old");
}

TEST_F(AtomicFile, ASymbolicLinkIsRefusedAndItsTargetKept) {
  const fs::path target = dir_ / "precious.txt";
  write_bytes(target, "precious\n");
  const fs::path link = dir_ / "compare.html";
  fs::create_symlink(target, link);
  const std::string msg = write_error([&] { write_file_atomically(link, "<html>"); });
  EXPECT_EQ(msg, "cannot write " + link.string() +
                     ": it is a symbolic link (gpuvs does not write through links; remove it "
                     "or write elsewhere)");
  EXPECT_EQ(read_bytes(target), "precious\n");
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(fs::read_symlink(link), target);
  EXPECT_EQ(list_dir(dir_), (Names{"compare.html", "precious.txt"}));

  // A dangling link, and one to a folder: nothing is created where they point.
  const fs::path dangling = dir_ / "dangling.json";
  fs::create_symlink(dir_ / "absent.json", dangling);
  EXPECT_NE(write_error([&] { write_file_atomically(dangling, "x"); }).find("symbolic link"),
            std::string::npos);
  EXPECT_FALSE(fs::exists(dir_ / "absent.json"));
  fs::create_directory(dir_ / "folder");
  const fs::path to_folder = dir_ / "to-folder";
  fs::create_directory_symlink(dir_ / "folder", to_folder);
  EXPECT_NE(write_error([&] { write_file_atomically(to_folder, "x"); }).find("symbolic link"),
            std::string::npos);
  EXPECT_TRUE(fs::is_empty(dir_ / "folder"));
  EXPECT_EQ(list_dir(dir_),
            (Names{"compare.html", "dangling.json", "folder", "precious.txt", "to-folder"}));
}

TEST_F(AtomicFile, AFolderOrASpecialFileIsRefused) {
  const fs::path folder = dir_ / "out";
  fs::create_directory(folder);
  write_bytes(folder / "keep.txt", "keep");
  EXPECT_EQ(write_error([&] { write_file_atomically(folder, "x"); }),
            "cannot write " + folder.string() + ": Is a directory");
  EXPECT_EQ(list_dir(folder), Names{"keep.txt"});

  const fs::path fifo = dir_ / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  EXPECT_EQ(write_error([&] { write_file_atomically(fifo, "x"); }),
            "cannot write " + fifo.string() + ": it is not a regular file");
  EXPECT_TRUE(fs::is_fifo(fifo));
  EXPECT_EQ(list_dir(dir_), (Names{"out", "pipe"}));
}

TEST_F(AtomicFile, AMissingFolderIsNamedNotMade) {
  const fs::path path = dir_ / "no" / "such" / "compare.csv";
  EXPECT_EQ(write_error([&] { write_file_atomically(path, "x"); }),
            "cannot write " + path.string() + ": directory " + (dir_ / "no" / "such").string() +
                " does not exist");
  EXPECT_FALSE(fs::exists(dir_ / "no"));
  write_bytes(dir_ / "file", "x");
  EXPECT_EQ(write_error([&] { write_file_atomically(dir_ / "file" / "a.csv", "y"); }),
            "cannot write " + (dir_ / "file" / "a.csv").string() + ": " + (dir_ / "file").string() +
                " is not a directory");
  EXPECT_EQ(read_bytes(dir_ / "file"), "x");
}

TEST_F(AtomicFile, WhatNamesTheKindOfFile) {
  const fs::path path = dir_ / "no" / "rendezvous";
  EXPECT_EQ(write_error([&] { write_file_atomically(path, "x", "the rendezvous file"); }),
            "cannot write the rendezvous file " + path.string() + ": directory " +
                (dir_ / "no").string() + " does not exist");
}

TEST_F(AtomicFile, AFailedWriteLeavesTheOldFileWholeAndNoTemporary) {
  // RLIMIT_FSIZE makes write() fail part way with EFBIG, even for root; in a child,
  // so that the limit and SIGXFSZ's handler stay there.
  const fs::path path = dir_ / "compare.html";
  const std::string old = make_content('O', 16 << 10);
  write_file_atomically(path, old);
  const ChildSaid said = in_child([&] {
    ::signal(SIGXFSZ, SIG_IGN);
    rlimit limit{};
    ::getrlimit(RLIMIT_FSIZE, &limit);
    limit.rlim_cur = 64 << 10;
    if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) return std::string("setrlimit failed");
    write_file_atomically(path, make_content('N', 1 << 20));
    return std::string("written");
  });
  EXPECT_TRUE(WIFEXITED(said.status) && WEXITSTATUS(said.status) == 1) << said.status;
  EXPECT_EQ(said.text, "error: cannot write " + path.string() + ": File too large");
  EXPECT_EQ(read_bytes(path), old);
  EXPECT_EQ(list_dir(dir_), Names{"compare.html"});
}

TEST_F(AtomicFile, AFolderWithoutWritePermissionLeavesTheOldFile) {
  const fs::path path = dir_ / "run.json";
  write_bytes(path, "old");
  fs::permissions(dir_, fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                            fs::perms::group_exec | fs::perms::others_read |
                            fs::perms::others_exec);
  // Root writes into any folder: as root, the child drops to uid and gid 65534
  // (nobody) first, which the folder (0555, root's) does not let write.
  const bool root = ::geteuid() == 0;
  const ChildSaid said = in_child([&] {
    if (root && (::setgroups(0, nullptr) != 0 || ::setgid(65534) != 0 || ::setuid(65534) != 0))
      return std::string("cannot drop root: ") + std::strerror(errno);
    write_file_atomically(path, "new");
    return std::string("written");
  });
  fs::permissions(dir_, fs::perms::owner_all, fs::perm_options::add);
  if (said.text.rfind("cannot drop root", 0) == 0)
    GTEST_SKIP() << "running as root, whom permissions do not stop, and " << said.text;
  EXPECT_EQ(said.text, "error: cannot write " + path.string() + ": Permission denied");
  EXPECT_EQ(read_bytes(path), "old");
  EXPECT_EQ(list_dir(dir_), Names{"run.json"});
}

TEST_F(AtomicFile, SigkillAtAnyMomentLeavesOneCompleteContent) {
  // A child rewrites the file in a loop, B then A then B ...; it is killed at a
  // random moment, 100 times. Each time the file must be all of A or all of B.
  const fs::path path = dir_ / "run.json";
  const std::string a = make_content('A', 3 << 20);
  const std::string b = make_content('B', (3 << 20) + 4096);
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  write_file_atomically(path, b);
  write_file_atomically(path, a);  // the file holds A before the first kill
  const auto write_us =
      std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0).count() / 2;

  const unsigned seed = std::random_device{}();
  std::mt19937 rng(seed);
  // From "before the child wrote anything" to about three of its writes (at most
  // 0.3 s, so that a slow disk keeps the test within seconds).
  std::uniform_int_distribution<long> delay_us(0,
                                               std::clamp<long>(3 * long(write_us), 2000, 300000));
  const std::regex temporary(R"(\.run\.json\.gpuvs-tmp\.[0-9]+\.[0-9a-f]{16})");
  int saw_a = 0, saw_b = 0, with_leftover = 0;
  for (int kill_no = 0; kill_no < 100; ++kill_no) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0) << std::strerror(errno);
    if (pid == 0) {
      try {
        for (;;) {
          write_file_atomically(path, b);
          write_file_atomically(path, a);
        }
      } catch (...) {
        ::_exit(3);
      }
    }
    std::this_thread::sleep_for(std::chrono::microseconds(delay_us(rng)));
    ::kill(pid, SIGKILL);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
        << "the writer stopped by itself (status " << status << ")";
    const std::string now = read_bytes(path);
    if (now == a) {
      ++saw_a;
    } else if (now == b) {
      ++saw_b;
    } else {
      FAIL() << "after kill " << kill_no + 1 << " (seed " << seed << "): " << describe(now, a, b);
    }
    // A kill between creating and renaming the temporary file leaves it: expected,
    // and named as the header says.
    bool left = false;
    for (const std::string& name : list_dir(dir_)) {
      if (name == "run.json") continue;
      EXPECT_TRUE(std::regex_match(name, temporary)) << name;
      fs::remove(dir_ / name);
      left = true;
    }
    with_leftover += left;
  }
  const double total_s = std::chrono::duration<double>(Clock::now() - t0).count();
  std::cout << fmt::format(
      "100 kills in {:.1f} s (one write of {:.1f} MB: {:.1f} ms; seed {}): A {}, B {}, a "
      "temporary file left by {}\n",
      total_s, double(b.size()) / 1e6, double(write_us) / 1e3, seed, saw_a, saw_b, with_leftover);
  // The kills landed both between writes and inside them.
  EXPECT_GT(saw_b, 0) << "the child never finished a write before its kill";
  EXPECT_GT(saw_a, 0);
  EXPECT_GT(with_leftover, 0) << "no kill landed during a write";
}

TEST_F(AtomicFile, RacingThreadsLeaveOneCompleteContent) {
  const fs::path path = dir_ / "gpuvs.prom";
  const std::string a = make_content('A', 256 << 10);
  const std::string b = make_content('B', (256 << 10) + 100);
  write_file_atomically(path, a);
  std::atomic<int> writing{2};
  std::string errors[2];
  const auto writer = [&](int i, const std::string& mine) {
    try {
      for (int n = 0; n < 50; ++n)
        write_file_atomically(path, mine);
    } catch (const Error& e) {
      errors[i] = e.what();
    }
    --writing;
  };
  std::thread t1(writer, 0, std::cref(a));
  std::thread t2(writer, 1, std::cref(b));
  int reads = 0;
  std::string bad;
  while (writing > 0 && bad.empty()) {
    const std::string now = read_bytes(path);
    if (now != a && now != b) bad = describe(now, a, b);
    ++reads;
  }
  t1.join();
  t2.join();
  EXPECT_EQ(bad, "") << "after " << reads << " reads";
  EXPECT_EQ(errors[0], "");
  EXPECT_EQ(errors[1], "");
  const std::string last = read_bytes(path);
  EXPECT_TRUE(last == a || last == b) << describe(last, a, b);
  EXPECT_EQ(list_dir(dir_), Names{"gpuvs.prom"});
}

TEST_F(AtomicFile, RacingProcessesLeaveOneCompleteContent) {
  const fs::path path = dir_ / "rendezvous";
  const std::string a = make_content('A', 256 << 10);
  const std::string b = make_content('B', (256 << 10) + 100);
  write_file_atomically(path, a);
  pid_t pids[2];
  for (int i = 0; i < 2; ++i) {
    pids[i] = ::fork();
    ASSERT_GE(pids[i], 0);
    if (pids[i] == 0) {
      try {
        for (int n = 0; n < 50; ++n)
          write_file_atomically(path, i == 0 ? a : b);
      } catch (...) {
        ::_exit(3);
      }
      ::_exit(0);
    }
  }
  int running = 2, reads = 0;
  int status[2] = {-1, -1};
  std::string bad;
  while (running > 0) {
    const std::string now = read_bytes(path);
    if (bad.empty() && now != a && now != b) bad = describe(now, a, b);
    ++reads;
    for (int i = 0; i < 2; ++i) {
      int st = 0;
      if (status[i] == -1 && ::waitpid(pids[i], &st, WNOHANG) == pids[i]) {
        status[i] = st;
        --running;
      }
    }
  }
  EXPECT_EQ(bad, "") << "after " << reads << " reads";
  for (int s : status)
    EXPECT_TRUE(WIFEXITED(s) && WEXITSTATUS(s) == 0) << s;
  const std::string last = read_bytes(path);
  EXPECT_TRUE(last == a || last == b) << describe(last, a, b);
  EXPECT_EQ(list_dir(dir_), Names{"rendezvous"});
}

}  // namespace
}  // namespace gpuvs
