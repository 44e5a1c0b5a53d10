// The control plane's background side (control.h): the connections, the socket loop
// and the per-rank state that ControlPlane's public calls read under its mutex. Private
// to control.cpp, which is the public API; split out so each file stays one concern.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "comm/control.h"
#include "comm/control_wire.h"
#include "core/error.h"

namespace gpuvs::comm {

namespace control_detail {

using namespace wire;

using Clock = std::chrono::steady_clock;

inline Clock::time_point deadline_after(double seconds) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(
                            std::chrono::duration<double>(std::clamp(seconds, 0.0, 1e7)));
}

inline void set_options(int fd) {
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  // A host that vanishes (power, network) closes nothing; keepalive turns it into a
  // broken connection, hence a death, after ~25 s instead of hours.
  const int idle = 10, interval = 5, count = 3;
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof(interval));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof(count));
}

inline std::string sockaddr_text(const sockaddr_in& a) {
  char ip[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &a.sin_addr, ip, sizeof(ip));
  return fmt::format("{}:{}", ip, ntohs(a.sin_port));
}

// One non-blocking connection attempt within `deadline`; -1 with `error` set on failure.
inline int try_connect(const ControlAddress& root, Clock::time_point deadline, std::string& error) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  const std::string port = std::to_string(root.port);
  if (int rc = getaddrinfo(root.host.c_str(), port.c_str(), &hints, &list); rc != 0) {
    error = gai_strerror(rc);
    return -1;
  }
  int fd = -1;
  for (addrinfo* ai = list; ai != nullptr && fd < 0; ai = ai->ai_next) {
    fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      error = std::strerror(errno);
      break;
    }
    int err = connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 ? 0 : errno;
    if (err == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      socklen_t len = sizeof(err);
      if (poll(&p, 1, int(std::clamp<int64_t>(left.count(), 1, 1000))) <= 0)
        err = ETIMEDOUT;
      else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
        err = errno;
    }
    // Connecting to an unused local port in the ephemeral range can pick that very port as
    // the source and connect the socket to itself (TCP simultaneous open).
    sockaddr_in self{}, peer{};
    socklen_t sl = sizeof(self), pl = sizeof(peer);
    if (err == 0 && getsockname(fd, reinterpret_cast<sockaddr*>(&self), &sl) == 0 &&
        getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &pl) == 0 &&
        self.sin_port == peer.sin_port && self.sin_addr.s_addr == peer.sin_addr.s_addr) {
      err = ECONNREFUSED;
    }
    if (err != 0) {
      error = std::strerror(err);
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(list);
  if (fd >= 0) set_options(fd);
  return fd;
}

inline std::string rank_list(const std::vector<int>& ranks) {
  return fmt::format("{} {}", ranks.size() == 1 ? "rank" : "ranks", fmt::join(ranks, ", "));
}

}  // namespace control_detail

using namespace control_detail;

class ControlPlane::Impl {
 public:
  struct Conn {
    int fd = -1;
    int rank = -1;  // rank 0: -1 until JOIN is accepted; other ranks: 0
    std::string peer, in, out;
    bool rejected = false;  // REJECT queued: send it, then discard input until the peer closes
    bool shut = false, write_failed = false, closed = false;
  };
  struct Rank {
    PeerInfo info;
    bool has_info = false, joined = false, dead = false, bye = false;
    int64_t step = -1;
    std::string what;
    std::optional<Clock::time_point> heard;  // last bytes from it; only for connected peers
  };

  Impl(int rank, int world)
      : rank_(rank), world_(world), ranks_(world), conn_of_(world), remote_silence_(world, -1.0) {
    int fds[2];
    if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0)
      throw Error(fmt::format("control: pipe: {}", std::strerror(errno)));
    wake_r_ = fds[0];
    wake_w_ = fds[1];
  }
  ~Impl() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    wake();
    if (thread_.joinable()) thread_.join();
    // The last step tells the peers what this rank was doing when it went away.
    if (step_pending_) send_locked(0, {});
    for (auto& c : conns_)
      flush(*c);
    // Read what is pending before closing, so the kernel ends with FIN rather than RST and
    // data already sent (a BYE) is not thrown away.
    for (auto& c : conns_) {
      shutdown(c->fd, SHUT_WR);
      char buf[4096];
      while (recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT) > 0) {
      }
      close(c->fd);
    }
    if (listen_fd_ >= 0) close(listen_fd_);
    close(wake_r_);
    close(wake_w_);
  }

  void start() {
    thread_ = std::thread([this] { loop(); });
  }
  void wake() const {
    const char b = 1;
    [[maybe_unused]] auto n = write(wake_w_, &b, 1);  // a full pipe already wakes the thread
  }

  // Queue a frame to rank r (rank 0: any rank; others: only rank 0); dropped when gone.
  void send_locked(int r, std::string frame) {
    Conn* c = conn_of_[r];
    if (c == nullptr || c->closed || c->write_failed) return;
    if (rank_ > 0 && step_pending_) {  // keep a step ahead of whatever follows it
      step_pending_ = false;
      c->out += Out(Msg::kStep).i64(ranks_[rank_].step).str(ranks_[rank_].what).done();
    }
    c->out += frame;
    if (std::this_thread::get_id() != loop_id_) wake();
  }

  void loop() {
    std::vector<pollfd> fds;
    std::unique_lock lock(mu_);
    loop_id_ = std::this_thread::get_id();  // not thread_.get_id(): that is set after we start
    while (!stop_) {
      if (step_pending_) send_locked(0, {});
      if (Clock::now() >= next_beat_) {  // also at once after a SIGSTOP ends
        const std::string beat = Out(Msg::kHeartbeat).done();
        for (int q = rank_ == 0 ? 1 : 0; q < (rank_ == 0 ? world_ : 1); ++q)
          send_locked(q, beat);
        next_beat_ = deadline_after(kHeartbeatS);
      }
      const auto wait_ms =
          std::chrono::ceil<std::chrono::milliseconds>(next_beat_ - Clock::now()).count();
      fds.assign({{wake_r_, POLLIN, 0}, {listen_fd_, POLLIN, 0}});
      const size_t n = conns_.size();
      for (auto& c : conns_)
        fds.push_back({c->fd, short(POLLIN | (c->out.empty() ? 0 : POLLOUT)), 0});
      lock.unlock();
      poll(fds.data(), fds.size(), int(std::clamp<int64_t>(wait_ms, 0, 1000)));  // -1 fd: ignored
      lock.lock();
      char buf[256];
      while (read(wake_r_, buf, sizeof(buf)) > 0) {
      }
      if (fds[1].revents & POLLIN) accept_all();
      for (size_t i = 0; i < n; ++i) {
        Conn& c = *conns_[i];
        if (!c.closed && (fds[i + 2].revents & (POLLIN | POLLHUP | POLLERR))) read_from(c);
      }
      for (auto& c : conns_)
        flush(*c);
      std::erase_if(conns_, [](const std::unique_ptr<Conn>& c) {
        if (c->closed) close(c->fd);
        return c->closed;
      });
      cv_.notify_all();
    }
  }

  void accept_all() {
    for (;;) {
      sockaddr_in a{};
      socklen_t len = sizeof(a);
      const int fd =
          accept4(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) return;
      set_options(fd);
      auto c = std::make_unique<Conn>();
      c->fd = fd;
      c->peer = sockaddr_text(a);
      conns_.push_back(std::move(c));
    }
  }

  void read_from(Conn& c) {
    char buf[65536];
    for (int chunk = 0; chunk < 64 && !c.closed; ++chunk) {  // bounded: others get a turn
      const ssize_t n = recv(c.fd, buf, sizeof(buf), MSG_DONTWAIT);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      if (n <= 0) return lost(c);  // EOF or reset
      if (c.rejected) continue;
      c.in.append(buf, size_t(n));
      size_t used = 0;
      try {
        while (!c.closed && c.in.size() - used >= 4) {
          const uint32_t len = be32(c.in.data() + used);
          if (len == 0 || len > kMaxFrame) throw Error(fmt::format("frame of {} bytes", len));
          if (c.in.size() - used - 4 < len) break;
          const auto type = Msg(c.in[used + 4]);
          In body(std::string_view(c.in).substr(used + 5, len - 1));
          used += 4 + size_t(len);
          rank_ == 0 ? handle_root(c, type, body) : handle_client(type, body);
        }
        c.in.erase(0, used);
        if (c.rank >= 0) ranks_[c.rank].heard = Clock::now();  // any frame, part of one too
      } catch (const Error& e) {
        c.in.clear();
        if (rank_ == 0 && c.rank < 0) return reject(c, e.what());
        errors_.push_back(fmt::format("malformed control message from {} ({}): {}",
                                      describe_locked(c.rank), c.peer, e.what()));
        return lost(c);
      }
    }
  }

  void flush(Conn& c) {
    while (!c.closed && !c.write_failed && !c.out.empty()) {
      const ssize_t n = send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) {
        c.out.erase(0, size_t(n));
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        return;
      } else {
        // The peer is gone, but it may have sent BYE first: let reading decide.
        c.write_failed = true;
        c.out.clear();
        read_from(c);
      }
    }
    if (c.rejected && c.out.empty() && !c.shut && !c.closed) {
      shutdown(c.fd, SHUT_WR);
      c.shut = true;
    }
  }

  void reject(Conn& c, const std::string& reason) {
    errors_.push_back(fmt::format("refused a control connection from {}: {}", c.peer, reason));
    c.out = Out(Msg::kReject).str(reason).done();
    c.rejected = true;
  }

  void lost(Conn& c) {
    c.closed = true;
    if (c.rank < 0 || conn_of_[c.rank] != &c) return;
    conn_of_[c.rank] = nullptr;
    Rank& r = ranks_[c.rank];
    if (r.bye || stop_) return;
    r.dead = true;
    if (rank_ != 0) return;
    const std::string dead = Out(Msg::kDead).u32(c.rank).i64(r.step).str(r.what).done();
    for (int q = 1; q < world_; ++q)
      send_locked(q, dead);
  }

  void handle_root(Conn& c, Msg m, In& in) {
    if (c.rank < 0) {
      if (m != Msg::kJoin || in.str() != kMagic) throw Error("not a gpuvs control client");
      const int r = in.i32(), w = in.i32();
      in.end();
      if (w != world_)
        throw Error(fmt::format("rank {} says world size {}, rank 0 has {}", r, w, world_));
      if (r < 1 || r >= world_)
        throw Error(fmt::format("rank {} is out of range 1..{}", r, world_ - 1));
      if (ranks_[r].joined) throw Error(fmt::format("rank {} already joined", r));
      ranks_[r].joined = true;
      ranks_[r].heard = Clock::now();
      c.rank = r;
      conn_of_[r] = &c;
      return send_locked(r, Out(Msg::kAccept).done());
    }
    Rank& r = ranks_[c.rank];
    switch (m) {
      case Msg::kHello:
        if (r.has_info) throw Error("a second hello");
        r.info = in.peer();
        r.info.rank = c.rank;
        r.has_info = true;
        in.end();
        return finish_hello_locked();
      case Msg::kStep:
        r.step = in.i64();
        r.what = in.str();
        return in.end();
      case Msg::kStepsReq: {
        Out o(Msg::kSteps);
        o.u32(in.u32()).u32(uint32_t(world_));
        in.end();
        const std::vector<double> silence = silence_locked();
        for (int q = 0; q < world_; ++q)
          o.i64(ranks_[q].step)
              .str(ranks_[q].what)
              .i64(silence[q] < 0 ? -1 : llround(silence[q] * 1e3));
        return send_locked(c.rank, o.done());
      }
      case Msg::kBye:
        r.bye = true;
        return in.end();
      case Msg::kHeartbeat:  // read_from already noted the time
        return in.end();
      default:
        throw Error(fmt::format("unexpected message type {}", int(m)));
    }
  }

  void handle_client(Msg m, In& in) {
    if (!accepted_ && m != Msg::kAccept && m != Msg::kReject) throw Error("message before ACCEPT");
    switch (m) {
      case Msg::kAccept:
        accepted_ = true;
        return in.end();
      case Msg::kReject:
        refused_ = in.str();
        return in.end();
      case Msg::kTable:
        if (in.u32() != uint32_t(world_)) throw Error("table of another world size");
        for (Rank& k : ranks_) {
          k.info = in.peer();
          k.has_info = true;
        }
        table_ready_ = true;
        return in.end();
      case Msg::kBcast:
        bcasts_.push_back(in.str());
        return in.end();
      case Msg::kSteps: {
        const uint32_t id = in.u32();
        if (in.u32() != uint32_t(world_)) throw Error("steps of another world size");
        for (int q = 0; q < world_; ++q) {
          const int64_t s = in.i64();
          std::string what = in.str();
          const int64_t silence_ms = in.i64();
          remote_silence_[q] = silence_ms < 0 ? -1.0 : double(silence_ms) * 1e-3;
          if (q == rank_) continue;  // our own step is newer here than at rank 0
          ranks_[q].step = s;
          ranks_[q].what = std::move(what);
        }
        steps_reply_ = std::max(steps_reply_, id);
        return in.end();
      }
      case Msg::kDead: {
        const int q = in.i32();
        if (q < 1 || q >= world_) throw Error(fmt::format("death of rank {} out of range", q));
        ranks_[q].dead = true;
        ranks_[q].step = in.i64();
        ranks_[q].what = in.str();
        return in.end();
      }
      case Msg::kBye:
        ranks_[0].bye = true;
        return in.end();
      case Msg::kHeartbeat:
        return in.end();
      default:
        throw Error(fmt::format("unexpected message type {}", int(m)));
    }
  }

  // Rank 0: once every rank said hello, fill local ranks and send the table to all.
  void finish_hello_locked() {
    if (table_ready_ || !my_hello_) return;
    for (const Rank& k : ranks_)
      if (!k.has_info) return;
    for (Rank& k : ranks_) {
      k.info.local_rank = k.info.local_size = 0;
      for (const Rank& o : ranks_) {
        if (o.info.host != k.info.host) continue;
        k.info.local_rank += o.info.rank < k.info.rank;
        ++k.info.local_size;
      }
    }
    Out table(Msg::kTable);
    table.u32(uint32_t(world_));
    for (const Rank& k : ranks_)
      table.peer(k.info);
    const std::string frame = table.done();
    for (int q = 1; q < world_; ++q)
      send_locked(q, frame);
    table_ready_ = true;
    cv_.notify_all();
  }

  std::string describe_locked(int r, bool with_step = true) const {
    if (r < 0 || r >= world_) return fmt::format("rank {}", r);
    const Rank& k = ranks_[r];
    std::vector<std::string> parts;
    if (k.has_info) {
      if (!k.info.host.empty()) parts.push_back(k.info.host);
      parts.push_back(fmt::format("pid {}", k.info.pid));
    }
    if (with_step && k.step >= 0)
      parts.push_back(k.what.empty() ? fmt::format("last step {}", k.step)
                                     : fmt::format("last step {}: {}", k.step, k.what));
    if (parts.empty()) return fmt::format("rank {}", r);
    return fmt::format("rank {} ({})", r, fmt::join(parts, ", "));
  }

  std::string death_locked(int r) const {
    const Rank& k = ranks_[r];
    const std::string who = describe_locked(r, false);
    if (k.step < 0) return who + " exited before its first step";
    if (k.what.empty()) return fmt::format("{} exited during step {}", who, k.step);
    return fmt::format("{} exited during step {} ({})", who, k.step, k.what);
  }

  // This rank's own view; see ControlPlane::silence_s.
  std::vector<double> silence_locked() const {
    const auto now = Clock::now();
    std::vector<double> out(size_t(world_), -1.0);
    for (int q = 0; q < world_; ++q) {
      const Rank& k = ranks_[q];
      if (q == rank_)
        out[q] = 0;
      else if (k.heard && !k.dead && !k.bye)
        out[q] = std::chrono::duration<double>(now - *k.heard).count();
    }
    return out;
  }

  bool any_dead_locked() const { return !dead_locked().empty(); }
  std::vector<int> dead_locked() const {
    std::vector<int> dead;
    for (int q = 0; q < world_; ++q)
      if (ranks_[q].dead) dead.push_back(q);
    return dead;
  }
  // Throws when a rank this call waits for is dead: waiting longer cannot help.
  void throw_if_dead_locked(std::string_view call) const {
    if (!any_dead_locked()) return;
    std::vector<std::string> deaths;
    for (int q : dead_locked())
      deaths.push_back(death_locked(q));
    throw Error(fmt::format("{}: {}", call, fmt::join(deaths, "; ")));
  }
  bool drained_locked() const {
    return std::all_of(conns_.begin(), conns_.end(), [](const std::unique_ptr<Conn>& c) {
      return c->closed || c->write_failed || c->out.empty();
    });
  }

  const int rank_, world_;
  int port_ = 0;
  ControlAddress root_;  // ranks > 0
  int listen_fd_ = -1, wake_r_ = -1, wake_w_ = -1;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Rank> ranks_;                   // index = rank
  std::vector<Conn*> conn_of_;                // index = rank; null when not connected
  std::vector<std::unique_ptr<Conn>> conns_;  // only the thread adds and removes
  std::deque<std::string> bcasts_;            // ranks > 0: received, not yet returned
  std::vector<std::string> errors_;
  std::vector<double> remote_silence_;  // ranks > 0: rank 0's table from the last STEPS
  Clock::time_point next_beat_{};
  bool stop_ = false, my_hello_ = false, table_ready_ = false;
  bool accepted_ = false, step_pending_ = false;
  std::string refused_;
  uint32_t steps_request_ = 0, steps_reply_ = 0;
  std::thread thread_;
  std::thread::id loop_id_;
};

}  // namespace gpuvs::comm
