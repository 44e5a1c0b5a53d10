// The one reader of files users hand gpuvs: bounded, refusing what is not a file
// (a directory, /dev/zero, a terminal) before reading it, reading a pipe to its end
// within the same bound; and the UTF-8 check of text from such files.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>

#include "core/error.h"
#include "core/input_file.h"
#include "usage_error.h"

namespace gpuvs {
namespace {

namespace fs = std::filesystem;

class InputFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gpuvs_input_file_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path write(const std::string& name, const std::string& text) {
    const fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }

  fs::path dir_;
};

const auto error_of = gpuvs_test::usage_error_of;

TEST_F(InputFile, ReadsAWholeFileUpToItsLimit) {
  const fs::path p = write("ok.csv", std::string(1000, 'x'));
  EXPECT_EQ(read_input_file(p, "ok.csv", "claims file", 1000), std::string(1000, 'x'));
  EXPECT_EQ(error_of([&] { read_input_file(p, "ok.csv", "claims file", 999); }),
            "ok.csv: file is larger than 999 bytes, the limit for a claims file");
  EXPECT_EQ(read_input_file(write("empty", ""), "empty", "claims file", 10), "");
}

TEST_F(InputFile, LimitsAreNamedInMiB) {
  const fs::path p = write("big.csv", std::string((1 << 20) + 1, 'x'));
  EXPECT_EQ(error_of([&] { read_input_file(p, "big.csv", "prices file", kMaxPricesBytes); }),
            "big.csv: file is larger than 1 MiB, the limit for a prices file");
}

TEST_F(InputFile, RefusesWhatIsNotAFile) {
  EXPECT_EQ(error_of([&] { read_input_file(dir_, "d", "claims file", 100); }),
            "d: cannot read: Is a directory");
  EXPECT_EQ(error_of([&] { read_input_file("/dev/zero", "/dev/zero", "claims file", 100); }),
            "/dev/zero: cannot read: it is a character device, not a file (give a claims file)");
  EXPECT_NE(error_of([&] {
              read_input_file("/dev/null", "/dev/null", "catalogue", 100);
            }).find("character device"),
            std::string::npos);
  EXPECT_EQ(error_of([&] { read_input_file(dir_ / "none", "none", "claims file", 100); }),
            "none: cannot read: No such file or directory");
}

TEST_F(InputFile, ReadsAPipeWithinTheSameBound) {
  const fs::path fifo = dir_ / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const auto feed = [&](std::size_t bytes) {
    return std::thread([&, bytes] {
      const int fd = ::open(fifo.c_str(), O_WRONLY);
      if (fd < 0) return;
      const std::string chunk(4096, 'y');
      for (std::size_t sent = 0; sent < bytes;) {
        const ssize_t n = ::write(fd, chunk.data(), std::min(chunk.size(), bytes - sent));
        if (n <= 0) break;  // the reader gave up: EPIPE
        sent += std::size_t(n);
      }
      ::close(fd);
    });
  };
  ::signal(SIGPIPE, SIG_IGN);
  std::thread writer = feed(10000);
  // The writer may open after the reader: wait until it has, so the read sees its data.
  std::string text;
  for (int tries = 0; tries < 200 && text.empty(); ++tries) {
    text = read_input_file(fifo, "fifo", "claims file", 1 << 20);
    if (text.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  writer.join();
  EXPECT_EQ(text.size(), 10000u);
  // An endless writer (as /dev/zero would be) stops at the limit.
  std::thread endless = feed(std::size_t{1} << 30);
  std::string msg;
  for (int tries = 0; tries < 200 && msg.empty(); ++tries) {
    try {
      if (read_input_file(fifo, "fifo", "claims file", 1 << 16).empty())
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    } catch (const UsageError& e) {
      msg = e.what();
    }
  }
  endless.join();
  EXPECT_EQ(msg, "fifo: file is larger than 65536 bytes, the limit for a claims file");
}

TEST(Utf8, FindsTheFirstByteThatIsNotUtf8) {
  EXPECT_EQ(invalid_utf8_offset("plain ascii"), std::nullopt);
  EXPECT_EQ(invalid_utf8_offset("H200 \xc2\xb5s \xe2\x82\xac \xf0\x9f\x9a\x80"), std::nullopt);
  EXPECT_EQ(invalid_utf8_offset("caf\xe9"), 3u);                   // Latin-1 é
  EXPECT_EQ(invalid_utf8_offset("a\x80"), 1u);                     // lone continuation byte
  EXPECT_EQ(invalid_utf8_offset("\xc0\xaf"), 0u);                  // overlong '/'
  EXPECT_EQ(invalid_utf8_offset("x\xed\xa0\x80"), 1u);             // a surrogate, U+D800
  EXPECT_EQ(invalid_utf8_offset("\xf4\x90\x80\x80"), 0u);          // above U+10FFFF
  EXPECT_EQ(invalid_utf8_offset("ok \xe2\x82"), 3u);               // cut at the end
  EXPECT_EQ(invalid_utf8_offset(std::string("\xff\xfe", 2)), 0u);  // a UTF-16 BOM
}

TEST(Utf8, TextProblemsNameTheLine) {
  EXPECT_EQ(find_text_problem("a\nb\n", "claims file"), std::nullopt);
  const auto latin1 = find_text_problem("gpu,metric\nH200,caf\xe9\n", "claims file");
  ASSERT_TRUE(latin1);
  EXPECT_EQ(latin1->line, 2);
  EXPECT_EQ(latin1->problem, "byte 0xe9 is not UTF-8 (save the file as UTF-8)");
  const auto nul = find_text_problem(std::string("a\nb\nc\0d", 7), "prices file");
  ASSERT_TRUE(nul);
  EXPECT_EQ(nul->line, 3);
  EXPECT_EQ(nul->problem, "contains a NUL byte (a prices file is text)");
}

}  // namespace
}  // namespace gpuvs
