// The control plane over real loopback sockets: ranks as threads where only the protocol
// matters, as forked processes where a death (SIGKILL) or a stop (SIGSTOP) must be seen.
// Waits are bounded polls, generous for a loaded 2-core machine; ports are ephemeral.
#include "comm/control.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/error.h"

namespace gpuvs::comm {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

template <class Pred>
bool eventually(Pred pred, double seconds = 5.0) {
  const auto start = Clock::now();
  while (!pred()) {
    if (seconds_since(start) > seconds) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

ControlAddress local(int port) {
  return {"127.0.0.1", port};
}

PeerInfo me(const std::string& host, const std::string& detail) {
  PeerInfo p;
  p.host = host;
  p.pid = getpid();
  p.detail = detail;
  return p;
}

// Forked children are killed and reaped whatever the test's outcome.
struct Children {
  std::vector<pid_t> pids;
  ~Children() {
    for (pid_t p : pids) {
      if (p <= 0) continue;
      kill(p, SIGKILL);
      waitpid(p, nullptr, 0);
    }
  }
  // Exit code of pids[i], -1 if it did not exit in time, 128+signal when killed.
  int wait(size_t i, double seconds) {
    int status = 0;
    const bool done =
        eventually([&] { return waitpid(pids[i], &status, WNOHANG) == pids[i]; }, seconds);
    if (!done) return -1;
    pids[i] = 0;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
};

TEST(ControlAddress, RoundTrip) {
  for (std::string text : {"node-07.cluster:29500", "10.0.0.1:1", "localhost:65535"}) {
    const auto a = parse_control_address(text);
    ASSERT_TRUE(a) << text;
    EXPECT_EQ(to_string(*a), text);
  }
  const auto a = parse_control_address("gpu_host-3:8080");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->host, "gpu_host-3");
  EXPECT_EQ(a->port, 8080);
}

TEST(ControlAddress, Malformed) {
  for (const char* text : {"", ":", "host", "host:", ":80", "host:0", "host:65536", "host:123456",
                           "host:80x", "host:-1", "host:+80", "[::1]:80", "::1:80", "ho st:80",
                           "a:b:80", ".host:80", "host:80 "}) {
    EXPECT_FALSE(parse_control_address(text)) << text;
  }
}

TEST(ControlPlane, FourRanksHelloBroadcastStepsBye) {
  auto server = ControlPlane::serve(4, 0);
  ASSERT_GT(server->port(), 0);
  std::string blob(128, '\0');  // an NCCL unique id: binary, zero bytes included
  for (size_t i = 0; i < blob.size(); ++i)
    blob[i] = char(i % 3 == 0 ? 0 : i * 37);

  struct Result {
    std::vector<PeerInfo> table;
    std::string payload, error;
    std::vector<int64_t> steps;
    std::vector<int> bye{-1};
  };
  std::vector<Result> results(4);
  std::vector<std::thread> clients;
  for (int r = 1; r < 4; ++r) {
    clients.emplace_back([&, r] {
      try {
        auto cp = ControlPlane::join(local(server->port()), r, 4, 10);
        results[r].table = cp->hello(me("same-host", fmt::format("GPU {}", r)), 10);
        cp->step(100 + r, fmt::format("work {}", r));
        results[r].payload = cp->broadcast("ignored", 10);
        results[r].steps = cp->steps(10);
        results[r].bye = cp->bye(10);
      } catch (const std::exception& e) {
        results[r].error = e.what();
      }
    });
  }
  try {
    results[0].table = server->hello(me("same-host", "GPU 0"), 10);
    server->step(100, "work 0");
    // Broadcast only once every step is in: each rank's steps() comes after the broadcast,
    // so it must then see all of them.
    EXPECT_TRUE(eventually([&] {
      return server->steps(0) == std::vector<int64_t>{100, 101, 102, 103};
    }));
    results[0].payload = server->broadcast(blob, 10);
    results[0].steps = server->steps(0);
    results[0].bye = server->bye(10);
  } catch (const std::exception& e) {
    results[0].error = e.what();
  }
  for (auto& t : clients)
    t.join();

  for (int r = 0; r < 4; ++r) {
    SCOPED_TRACE(fmt::format("rank {}", r));
    const Result& got = results[r];
    EXPECT_EQ(got.error, "");
    ASSERT_EQ(got.table.size(), 4u);
    for (int q = 0; q < 4; ++q) {
      EXPECT_EQ(got.table[q].rank, q);
      EXPECT_EQ(got.table[q].host, "same-host");
      EXPECT_EQ(got.table[q].pid, getpid());
      EXPECT_EQ(got.table[q].detail, fmt::format("GPU {}", q));
      EXPECT_EQ(got.table[q].local_rank, q);
      EXPECT_EQ(got.table[q].local_size, 4);
    }
    EXPECT_EQ(got.payload, blob);
    EXPECT_EQ(got.steps, (std::vector<int64_t>{100, 101, 102, 103}));
    EXPECT_EQ(got.bye, std::vector<int>{});
  }
  EXPECT_EQ(server->dead_ranks(), std::vector<int>{});
  EXPECT_EQ(server->death_report(), "");
  EXPECT_EQ(server->errors(), std::vector<std::string>{});
  EXPECT_EQ(server->describe_rank(2),
            fmt::format("rank 2 (same-host, pid {}, last step 102: work 2)", getpid()));
}

TEST(ControlPlane, LocalRanksPerHost) {
  const std::vector<std::string> hosts = {"node-a", "node-b", "node-a", "node-b", "node-a"};
  const int world = int(hosts.size());
  auto server = ControlPlane::serve(world, 0);
  std::vector<std::vector<PeerInfo>> tables(world);
  std::vector<std::thread> clients;
  for (int r = 1; r < world; ++r) {
    clients.emplace_back([&, r] {
      try {
        auto cp = ControlPlane::join(local(server->port()), r, world, 10);
        tables[r] = cp->hello(me(hosts[r], ""), 10);
        cp->bye(10);
      } catch (const std::exception& e) {
        ADD_FAILURE() << "rank " << r << ": " << e.what();
      }
    });
  }
  try {
    tables[0] = server->hello(me(hosts[0], ""), 10);
    EXPECT_EQ(server->bye(10), std::vector<int>{});
  } catch (const std::exception& e) {
    ADD_FAILURE() << "rank 0: " << e.what();
  }
  for (auto& t : clients)
    t.join();
  const int local_rank[] = {0, 0, 1, 1, 2}, local_size[] = {3, 2, 3, 2, 3};
  for (const auto& table : tables) {
    ASSERT_EQ(table.size(), hosts.size());
    for (int q = 0; q < world; ++q) {
      EXPECT_EQ(table[q].local_rank, local_rank[q]) << q;
      EXPECT_EQ(table[q].local_size, local_size[q]) << q;
    }
  }
}

TEST(ControlPlane, HelloTimeoutNamesMissingRanks) {
  auto server = ControlPlane::serve(3, 0);
  std::string client_error;
  std::atomic<bool> server_done = false;
  std::thread client([&] {
    try {
      auto cp = ControlPlane::join(local(server->port()), 1, 3, 10);
      try {
        cp->hello(me("h", ""), 1.0);
      } catch (const Error& e) {
        client_error = e.what();
      }
      // Closing first would make rank 1 a death, which rank 0 would report instead.
      eventually([&] { return server_done.load(); }, 10);
    } catch (const Error& e) {
      client_error = e.what();
    }
  });
  const auto start = Clock::now();
  std::string error;
  try {
    server->hello(me("h", ""), 1.0);
  } catch (const Error& e) {
    error = e.what();
  }
  const double took = seconds_since(start);
  server_done = true;
  client.join();
  EXPECT_EQ(error, "hello: rank 2 of 3 did not join within 1 s");
  EXPECT_GE(took, 0.9);
  EXPECT_LT(took, 5.0);
  EXPECT_NE(client_error.find("no table from rank 0"), std::string::npos) << client_error;
}

TEST(ControlPlane, RankClosingWithoutByeIsDeadAndFailsHelloAtOnce) {
  auto server = ControlPlane::serve(3, 0);
  ControlPlane::join(local(server->port()), 2, 3, 10)->step(4, "warm-up");  // then gone, no BYE
  EXPECT_TRUE(eventually([&] { return server->dead_ranks() == std::vector<int>{2}; }));
  EXPECT_EQ(server->death_report(), "rank 2 exited during step 4 (warm-up)");
  const auto start = Clock::now();
  try {
    server->hello(me("h", ""), 30);
    ADD_FAILURE() << "hello succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "hello: rank 2 exited during step 4 (warm-up)");
  }
  EXPECT_LT(seconds_since(start), 5.0);
}

TEST(ControlPlane, JoinFailsWhenNobodyListens) {
  // A bound socket that never listens holds the port: connections are refused.
  const int holder = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(holder, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  ASSERT_EQ(bind(holder, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  ASSERT_EQ(getsockname(holder, reinterpret_cast<sockaddr*>(&a), &len), 0);
  const int port = ntohs(a.sin_port);

  const auto start = Clock::now();
  std::string error;
  try {
    ControlPlane::join(local(port), 1, 2, 0.5);
  } catch (const Error& e) {
    error = e.what();
  }
  const double took = seconds_since(start);
  close(holder);
  EXPECT_NE(error.find(fmt::format("127.0.0.1:{}", port)), std::string::npos) << error;
  EXPECT_NE(error.find("refused"), std::string::npos) << error;
  EXPECT_GE(took, 0.45);  // it retried until the timeout
  EXPECT_LT(took, 5.0);
}

TEST(ControlPlane, RefusesDuplicateRankOtherWorldAndGarbage) {
  auto server = ControlPlane::serve(3, 0);
  auto first = ControlPlane::join(local(server->port()), 1, 3, 10);
  const auto join_error = [&](int rank, int world) {
    try {
      ControlPlane::join(local(server->port()), rank, world, 10);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("joined");
  };
  EXPECT_NE(join_error(1, 3).find("refused rank 1: rank 1 already joined"), std::string::npos);
  EXPECT_NE(join_error(2, 4).find("world size 4, rank 0 has 3"), std::string::npos);

  // Not our protocol: rank 0 answers REJECT, closes, and carries on.
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(uint16_t(server->port()));
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  const std::string get = "GET / HTTP/1.0\r\n\r\n";
  ASSERT_EQ(send(fd, get.data(), get.size(), MSG_NOSIGNAL), ssize_t(get.size()));
  std::string answer;
  const bool closed = eventually([&] {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0) return false;
    char buf[512];
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n > 0) answer.append(buf, size_t(n));
    return n <= 0;
  });
  close(fd);
  EXPECT_TRUE(closed);
  EXPECT_NE(answer.find("frame of"), std::string::npos);  // the reason travels in the REJECT

  auto second = ControlPlane::join(local(server->port()), 2, 3, 10);
  EXPECT_EQ(server->errors().size(), 3u);
  for (const auto& line : server->errors())
    EXPECT_EQ(line.find("refused a control"), 0u) << line;
  EXPECT_EQ(server->dead_ranks(), std::vector<int>{});
}

// A rank in its own process: steps until rank 1 is reported dead (ranks 2, 3), or until it
// is killed (rank 1). Exit code 0 when it saw the death as it should.
int stepping_rank(int port, int rank, int world) {
  try {
    auto cp = ControlPlane::join(local(port), rank, world, 10);
    cp->hello(me("box", fmt::format("rank {}", rank)), 10);
    const auto until = Clock::now() + 30s;
    for (int64_t s = 0; Clock::now() < until; ++s) {
      cp->step(s, "all_reduce 1048576 B");
      if (rank != 1 && !cp->dead_ranks().empty()) {
        if (cp->dead_ranks() != std::vector<int>{1}) return 4;
        const std::string report = cp->death_report();
        if (report.find("rank 1 (box, pid ") != 0) return 5;
        if (report.find("exited during step") == std::string::npos) return 6;
        return cp->bye(10).empty() ? 0 : 7;
      }
      std::this_thread::sleep_for(10ms);
    }
    return 2;
  } catch (...) {
    return 3;
  }
}

// The port rank 0 writes into a pipe, or -1 after 10 s.
int read_port(int fd) {
  int port = -1;
  pollfd p{fd, POLLIN, 0};
  if (poll(&p, 1, 10000) != 1 || read(fd, &port, sizeof(port)) != ssize_t(sizeof(port))) return -1;
  return port;
}

TEST(ControlDeath, KilledRankIsReportedToEveryRank) {
  // Fork before any thread exists (rank 0's included): a child of a threaded process may
  // only call async-signal-safe functions, and sanitizers refuse the rest.
  int port_pipe[2];
  ASSERT_EQ(pipe(port_pipe), 0);
  Children kids;
  kids.pids.push_back(0);  // index = rank
  for (int r = 1; r < 4; ++r) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(port_pipe[1]);
      _exit(stepping_rank(read_port(port_pipe[0]), r, 4));
    }
    kids.pids.push_back(pid);
  }
  close(port_pipe[0]);
  auto server = ControlPlane::serve(4, 0);
  const int port = server->port();
  for (int r = 1; r < 4; ++r)
    ASSERT_EQ(write(port_pipe[1], &port, sizeof(port)), 4);
  close(port_pipe[1]);
  const pid_t victim = kids.pids[1];
  ASSERT_NO_THROW(server->hello(me("box", "rank 0"), 10));
  ASSERT_TRUE(eventually([&] {
    const auto s = server->steps(0);
    return s[1] >= 3 && s[2] >= 3 && s[3] >= 3;
  }));
  kill(victim, SIGKILL);
  EXPECT_TRUE(eventually([&] { return server->dead_ranks() == std::vector<int>{1}; }, 2.0));
  const std::string report = server->death_report();
  EXPECT_EQ(report.find(fmt::format("rank 1 (box, pid {}) exited during step ", victim)), 0u)
      << report;
  EXPECT_NE(report.find("(all_reduce 1048576 B)"), std::string::npos) << report;

  EXPECT_EQ(server->bye(10), std::vector<int>{1});
  EXPECT_EQ(kids.wait(1, 10), 128 + SIGKILL);
  EXPECT_EQ(kids.wait(2, 10), 0);  // they learnt of rank 1 from rank 0
  EXPECT_EQ(kids.wait(3, 10), 0);
}

TEST(ControlDeath, KilledRootIsSeenByRanks) {
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  Children kids;
  const pid_t root = fork();
  ASSERT_GE(root, 0);
  if (root == 0) {
    int code = 3;
    try {
      auto cp = ControlPlane::serve(2, 0);
      const int port = cp->port();
      if (write(pipe_fds[1], &port, sizeof(port)) == sizeof(port)) {
        cp->hello(me("box", "rank 0"), 10);
        std::this_thread::sleep_for(30s);  // until killed
        code = 2;
      }
    } catch (...) {
    }
    _exit(code);
  }
  kids.pids.push_back(root);
  close(pipe_fds[1]);
  const int port = read_port(pipe_fds[0]);
  close(pipe_fds[0]);
  ASSERT_GT(port, 0);

  auto cp = ControlPlane::join(local(port), 1, 2, 10);
  ASSERT_NO_THROW(cp->hello(me("box", "rank 1"), 10));
  cp->step(7, "broadcast");
  kill(root, SIGKILL);
  EXPECT_TRUE(eventually([&] { return cp->dead_ranks() == std::vector<int>{0}; }));
  EXPECT_EQ(cp->death_report(),
            fmt::format("rank 0 (box, pid {}) exited before its first step", root));
  // A call waiting on rank 0 fails at once instead of waiting out its timeout.
  const auto start = Clock::now();
  EXPECT_THROW(cp->broadcast("", 30), Error);
  EXPECT_LT(seconds_since(start), 5.0);
  EXPECT_EQ(cp->bye(1), std::vector<int>{0});
  EXPECT_EQ(kids.wait(0, 10), 128 + SIGKILL);
}

TEST(ControlHeartbeat, HealthyRanksStayHeard) {
  auto server = ControlPlane::serve(3, 0);
  EXPECT_EQ(server->silence_s(), (std::vector<double>{0, -1, -1}));  // nobody joined yet
  std::atomic<bool> done = false;
  std::vector<std::string> errors(3);
  std::vector<std::thread> clients;
  for (int r = 1; r < 3; ++r) {
    clients.emplace_back([&, r] {
      try {
        auto cp = ControlPlane::join(local(server->port()), r, 3, 10);
        cp->hello(me("box", ""), 10);
        cp->step(1, "busy");
        // The main thread sleeps as if stuck in a kernel: the background thread still beats.
        eventually([&] { return done.load(); }, 10);
        const auto local_view = cp->silence_s();
        if (local_view[0] < 0 || local_view[0] >= 2.0 || local_view[r] != 0 ||
            local_view[3 - r] != -1)
          errors[r] = fmt::format("silence_s {}", fmt::join(local_view, ", "));
        // The other client may already have said BYE: -1 then, not silent.
        const auto table = cp->silences(5);
        if (table[0] < 0 || table[0] >= 2.0 || table[r] != 0 || table[3 - r] >= 2.0)
          errors[r] = fmt::format("silences {}", fmt::join(table, ", "));
        if (const auto text = cp->describe_silent(2.0, 5); !text.empty()) errors[r] = text;
        if (!cp->bye(10).empty()) errors[r] = "bye";
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  }
  ASSERT_NO_THROW(server->hello(me("box", ""), 10));
  const auto start = Clock::now();
  while (seconds_since(start) < 2.5) {
    const auto silence = server->silence_s();
    ASSERT_EQ(silence.size(), 3u);
    EXPECT_EQ(silence[0], 0);
    for (int r = 1; r < 3; ++r) {
      EXPECT_GE(silence[r], 0) << r;
      EXPECT_LT(silence[r], 2.0) << r;
    }
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_EQ(server->describe_silent(2.0, 1.0), "");
  EXPECT_EQ(server->steps(0), (std::vector<int64_t>{-1, 1, 1}));  // beats are not steps
  done = true;
  EXPECT_EQ(server->bye(10), std::vector<int>{});
  for (auto& t : clients)
    t.join();
  for (int r = 1; r < 3; ++r)
    EXPECT_EQ(errors[r], "") << "rank " << r;
  EXPECT_EQ(server->silence_s(), (std::vector<double>{0, -1, -1}));  // gone after BYE
  EXPECT_EQ(server->dead_ranks(), std::vector<int>{});
}

// A rank in its own process that reports one step and then idles until killed.
int idle_rank(int port, int rank, int world) {
  try {
    auto cp = ControlPlane::join(local(port), rank, world, 10);
    cp->hello(me("box", fmt::format("rank {}", rank)), 10);
    cp->step(4, "all_reduce 4 KiB");
    std::this_thread::sleep_for(60s);
    return 2;
  } catch (...) {
    return 3;
  }
}

TEST(ControlSilence, StoppedRankIsSilentNotDeadAndHeardAgainAfterCont) {
  int port_pipe[2];
  ASSERT_EQ(pipe(port_pipe), 0);
  Children kids;
  kids.pids.push_back(0);    // index = rank
  const pid_t pid = fork();  // before any thread exists, as in ControlDeath
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(port_pipe[1]);
    _exit(idle_rank(read_port(port_pipe[0]), 1, 3));
  }
  kids.pids.push_back(pid);
  close(port_pipe[0]);
  auto server = ControlPlane::serve(3, 0);
  const int port = server->port();
  ASSERT_EQ(write(port_pipe[1], &port, sizeof(port)), 4);
  close(port_pipe[1]);
  // Rank 2 lives in this process: it sees rank 1 only through rank 0's table.
  auto peer = ControlPlane::join(local(port), 2, 3, 10);
  std::thread peer_hello([&] { EXPECT_NO_THROW(peer->hello(me("box", "rank 2"), 10)); });
  ASSERT_NO_THROW(server->hello(me("box", "rank 0"), 10));
  peer_hello.join();
  ASSERT_TRUE(eventually([&] { return server->steps(0)[1] == 4; }));
  server->step(4, "all_reduce 4 KiB");
  peer->step(4, "all_reduce 4 KiB");

  ASSERT_EQ(kill(pid, SIGSTOP), 0);
  std::this_thread::sleep_for(3500ms);
  const auto silence = server->silence_s();
  EXPECT_GT(silence[1], 2.5);
  EXPECT_LT(silence[2], 2.0);
  const std::string clause = fmt::format("rank 1 (box, pid {}) silent for ", pid);
  const std::string why = " s (stopped or hung; last step 4: all_reduce 4 KiB)";
  const std::string report = server->describe_silent(2.0, 1.0);
  EXPECT_EQ(report.find(clause), 0u) << report;
  EXPECT_NE(report.find(why), std::string::npos) << report;
  EXPECT_EQ(report.find(';'), report.find("; last step")) << report;  // only rank 1
  const auto seen_by_peer = peer->silences(5);
  EXPECT_GT(seen_by_peer[1], 2.5);
  EXPECT_LT(seen_by_peer[0], 2.0);
  EXPECT_EQ(seen_by_peer[2], 0);
  const std::string peer_report = peer->describe_silent(2.0, 5);
  EXPECT_EQ(peer_report.find(clause), 0u) << peer_report;
  EXPECT_NE(peer_report.find(why), std::string::npos) << peer_report;
  EXPECT_EQ(server->dead_ranks(), std::vector<int>{});  // silent is not dead
  EXPECT_EQ(server->steps(0), (std::vector<int64_t>{4, 4, 4}));

  ASSERT_EQ(kill(pid, SIGCONT), 0);
  EXPECT_TRUE(eventually([&] { return server->silence_s()[1] < 2.0; }, 2.5));
  EXPECT_EQ(server->describe_silent(2.0, 1.0), "");
  EXPECT_EQ(peer->describe_silent(2.0, 5), "");
  EXPECT_EQ(server->dead_ranks(), std::vector<int>{});
  // ~Children kills and reaps rank 1.
}

TEST(ControlSilence, StoppedRootIsNamedByRanks) {
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  Children kids;
  const pid_t root = fork();
  ASSERT_GE(root, 0);
  if (root == 0) {
    int code = 3;
    try {
      auto cp = ControlPlane::serve(2, 0);
      const int port = cp->port();
      if (write(pipe_fds[1], &port, sizeof(port)) == sizeof(port)) {
        cp->hello(me("box", "rank 0"), 10);
        cp->step(9, "broadcast");
        std::this_thread::sleep_for(60s);  // until killed
        code = 2;
      }
    } catch (...) {
    }
    _exit(code);
  }
  kids.pids.push_back(root);
  close(pipe_fds[1]);
  const int port = read_port(pipe_fds[0]);
  close(pipe_fds[0]);
  ASSERT_GT(port, 0);

  auto cp = ControlPlane::join(local(port), 1, 2, 10);
  ASSERT_NO_THROW(cp->hello(me("box", "rank 1"), 10));
  ASSERT_TRUE(eventually([&] { return cp->steps(1)[0] == 9; }));
  ASSERT_EQ(kill(root, SIGSTOP), 0);
  std::this_thread::sleep_for(3500ms);
  EXPECT_GT(cp->silence_s()[0], 2.5);
  const auto start = Clock::now();
  const std::string report = cp->describe_silent(2.0, 1.0);  // rank 0 cannot answer
  EXPECT_LT(seconds_since(start), 3.0);
  EXPECT_EQ(report.find(fmt::format("rank 0 (box, pid {}) silent for ", root)), 0u) << report;
  EXPECT_NE(report.find(" s (stopped or hung; last step 9: broadcast)"), std::string::npos)
      << report;
  EXPECT_EQ(cp->dead_ranks(), std::vector<int>{});
  ASSERT_EQ(kill(root, SIGCONT), 0);
  EXPECT_TRUE(eventually([&] { return cp->silence_s()[0] < 2.0; }, 2.5));
  EXPECT_EQ(cp->describe_silent(2.0, 5), "");
}

}  // namespace
}  // namespace gpuvs::comm
