// The watchdog of blocking NCCL calls: it fires at the deadline and aborts; when the
// abort itself does not bring the call back, it ends the process (exit 1) with the
// reason on stderr, never a hang.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <iterator>
#include <thread>

#include "comm/watchdog.h"

namespace gpuvs::comm {
namespace {

using namespace std::chrono_literals;

bool eventually(const std::function<bool()>& f, std::chrono::milliseconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (f()) return true;
    std::this_thread::sleep_for(5ms);
  }
  return f();
}

TEST(Watchdog, FiresAtTheDeadlineAndAbortsOnce) {
  std::atomic<int> aborts{0};
  Watchdog dog(0.2, nullptr, [&] { ++aborts; });
  const std::string what = "all_reduce 1 MiB";
  const auto t0 = std::chrono::steady_clock::now();
  dog.enter(&what);
  ASSERT_TRUE(eventually([&] { return aborts.load() == 1; }, 3000ms));
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 190ms);
  EXPECT_TRUE(dog.fired());
  EXPECT_EQ(dog.message(),
            "all_reduce 1 MiB did not return within 0.2 s (--timeout); communicator aborted");
  dog.leave();
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(aborts.load(), 1);
}

TEST(Watchdog, CallsThatReturnInTimeAreLeftAlone) {
  std::atomic<int> aborts{0};
  Watchdog dog(0.3, nullptr, [&] { ++aborts; });
  const std::string what = "broadcast 8 B";
  for (int i = 0; i < 20; ++i) {
    dog.enter(&what);
    std::this_thread::sleep_for(20ms);
    dog.leave();
  }
  std::this_thread::sleep_for(400ms);  // idle, no call marked: never fires
  EXPECT_FALSE(dog.fired());
  EXPECT_EQ(aborts.load(), 0);
}

// The abort never returns (ncclCommAbort waiting on the blocked thread): the process
// ends with exit code 1 after the grace period, saying why.
TEST(Watchdog, EndsTheProcessWhenTheAbortDoesNotBringTheCallBack) {
  const std::string err_path =
      testing::TempDir() + "watchdog_err_" + std::to_string(::getpid()) + ".txt";
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (!std::freopen(err_path.c_str(), "w", stderr)) ::_exit(120);
    Watchdog dog(
        0.2, nullptr, [] { std::this_thread::sleep_for(1000s); }, 0.5);
    const std::string what = "reduce_scatter 4 GiB";
    dog.enter(&what);
    std::this_thread::sleep_for(30s);  // the "blocked NCCL call"
    ::_exit(0);
  }
  const auto t0 = std::chrono::steady_clock::now();
  int status = 0;
  ASSERT_TRUE(eventually([&] { return ::waitpid(child, &status, WNOHANG) == child; }, 10000ms))
      << "the watchdog did not end the process";
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_LT(took, 5s);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1);
  std::ifstream in(err_path);
  const std::string err((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(err.find("gpuvs: error: reduce_scatter 4 GiB did not return within 0.2 s"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("NCCL did not return 0.5 s after the abort: exiting"), std::string::npos)
      << err;
  std::remove(err_path.c_str());
}

// The abort returns, but the blocked call does not come back: the same end.
TEST(Watchdog, EndsTheProcessWhenTheAbortedCallStaysBlocked) {
  const std::string err_path =
      testing::TempDir() + "watchdog_err2_" + std::to_string(::getpid()) + ".txt";
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (!std::freopen(err_path.c_str(), "w", stderr)) ::_exit(120);
    Watchdog dog(
        0.2, nullptr, [] {}, 0.5);
    const std::string what = "broadcast 8 B";
    dog.enter(&what);
    std::this_thread::sleep_for(30s);  // never leaves the call
    ::_exit(0);
  }
  int status = 0;
  ASSERT_TRUE(eventually([&] { return ::waitpid(child, &status, WNOHANG) == child; }, 10000ms));
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1);
  std::ifstream in(err_path);
  const std::string err((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(err.find("broadcast 8 B did not return within 0.2 s"), std::string::npos) << err;
  std::remove(err_path.c_str());
}

}  // namespace
}  // namespace gpuvs::comm
