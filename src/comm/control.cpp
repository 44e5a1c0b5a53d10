#include "comm/control.h"

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

#include "comm/control_wire.h"
#include "core/error.h"

namespace gpuvs::comm {

namespace {

using namespace wire;

using Clock = std::chrono::steady_clock;

Clock::time_point deadline_after(double seconds) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(
                            std::chrono::duration<double>(std::clamp(seconds, 0.0, 1e7)));
}

void set_options(int fd) {
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

std::string sockaddr_text(const sockaddr_in& a) {
  char ip[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &a.sin_addr, ip, sizeof(ip));
  return fmt::format("{}:{}", ip, ntohs(a.sin_port));
}

// One non-blocking connection attempt within `deadline`; -1 with `error` set on failure.
int try_connect(const ControlAddress& root, Clock::time_point deadline, std::string& error) {
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

std::string rank_list(const std::vector<int>& ranks) {
  return fmt::format("{} {}", ranks.size() == 1 ? "rank" : "ranks", fmt::join(ranks, ", "));
}

}  // namespace

std::string to_string(const ControlAddress& a) {
  return fmt::format("{}:{}", a.host, a.port);
}

std::optional<ControlAddress> parse_control_address(std::string_view text) {
  const auto colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return std::nullopt;
  const std::string_view host = text.substr(0, colon), port = text.substr(colon + 1);
  const bool host_ok = std::all_of(host.begin(), host.end(), [](char c) {
    return std::isalnum(uint8_t(c)) || c == '-' || c == '.' || c == '_';
  });
  if (!host_ok || host.front() == '.' || host.front() == '-') return std::nullopt;
  if (port.empty() || port.size() > 5) return std::nullopt;
  int value = 0;
  for (char c : port) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
  }
  if (value < 1 || value > 65535) return std::nullopt;
  return ControlAddress{std::string(host), value};
}

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

ControlPlane::ControlPlane(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ControlPlane::~ControlPlane() = default;

std::unique_ptr<ControlPlane> ControlPlane::serve(int world_size, int port) {
  if (world_size < 1 || port < 0 || port > 65535)
    throw Error(fmt::format("control: cannot serve world size {} on port {}", world_size, port));
  auto impl = std::make_unique<Impl>(0, world_size);
  impl->listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (impl->listen_fd_ < 0) throw Error(fmt::format("control: socket: {}", std::strerror(errno)));
  const int one = 1;  // a restarted run may reuse the port while old connections linger
  setsockopt(impl->listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  a.sin_port = htons(uint16_t(port));
  socklen_t len = sizeof(a);
  if (bind(impl->listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      listen(impl->listen_fd_, SOMAXCONN) != 0 ||
      getsockname(impl->listen_fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0)
    throw Error(fmt::format("control: cannot listen on port {}: {}", port, std::strerror(errno)));
  impl->port_ = ntohs(a.sin_port);
  impl->ranks_[0].joined = true;
  impl->start();
  return std::unique_ptr<ControlPlane>(new ControlPlane(std::move(impl)));
}

std::unique_ptr<ControlPlane> ControlPlane::join(const ControlAddress& root, int rank,
                                                 int world_size, double timeout_s) {
  if (rank < 1 || rank >= world_size)
    throw Error(fmt::format("control: rank {} of {} cannot join rank 0", rank, world_size));
  const std::string where = to_string(root);
  const auto deadline = deadline_after(timeout_s);
  std::string error = "timed out";
  int fd = -1;
  while ((fd = try_connect(root, deadline, error)) < 0) {
    const auto now = Clock::now();
    if (now >= deadline)
      throw Error(fmt::format("control: cannot reach rank 0 at {} within {:g} s: {}", where,
                              timeout_s, error));
    std::this_thread::sleep_for(
        std::min<Clock::duration>(deadline - now, std::chrono::milliseconds(100)));
  }
  auto impl = std::make_unique<Impl>(rank, world_size);
  impl->root_ = root;
  impl->port_ = root.port;
  auto conn = std::make_unique<Impl::Conn>();
  conn->fd = fd;
  conn->rank = 0;
  conn->peer = where;
  impl->conn_of_[0] = conn.get();
  impl->conns_.push_back(std::move(conn));
  impl->ranks_[0].joined = true;
  impl->ranks_[0].heard = Clock::now();
  impl->send_locked(0, Out(Msg::kJoin).str(kMagic).u32(rank).u32(world_size).done());
  impl->start();
  // A connection made at the last moment still gets time for the answer.
  const auto answer_by = std::max(deadline, Clock::now() + std::chrono::seconds(2));
  std::unique_lock lock(impl->mu_);
  impl->cv_.wait_until(lock, answer_by, [&] {
    return impl->accepted_ || !impl->refused_.empty() || impl->ranks_[0].dead;
  });
  if (!impl->refused_.empty())
    throw Error(
        fmt::format("control: rank 0 at {} refused rank {}: {}", where, rank, impl->refused_));
  if (!impl->accepted_)
    throw Error(
        impl->ranks_[0].dead
            ? fmt::format("control: rank 0 at {} closed the connection of rank {}", where, rank)
            : fmt::format("control: no answer from rank 0 at {} within {:g} s", where, timeout_s));
  lock.unlock();
  return std::unique_ptr<ControlPlane>(new ControlPlane(std::move(impl)));
}

int ControlPlane::rank() const {
  return impl_->rank_;
}
int ControlPlane::world_size() const {
  return impl_->world_;
}
int ControlPlane::port() const {
  return impl_->port_;
}

std::vector<PeerInfo> ControlPlane::hello(const PeerInfo& me, double timeout_s) {
  Impl& s = *impl_;
  const auto deadline = deadline_after(timeout_s);
  std::unique_lock lock(s.mu_);
  if (s.my_hello_) throw Error("control: hello called twice");
  s.my_hello_ = true;
  auto& mine = s.ranks_[s.rank_];
  mine.info = me;
  mine.info.rank = s.rank_;
  mine.has_info = true;
  if (s.rank_ == 0) {
    s.finish_hello_locked();
  } else {
    s.send_locked(0, Out(Msg::kHello).peer(mine.info).done());
  }
  s.cv_.wait_until(lock, deadline, [&] { return s.table_ready_ || s.any_dead_locked(); });
  if (!s.table_ready_) {
    s.throw_if_dead_locked("hello");
    if (s.rank_ > 0)
      throw Error(fmt::format("hello: no table from rank 0 at {} within {:g} s", to_string(s.root_),
                              timeout_s));
    std::vector<int> absent, silent;
    for (int q = 1; q < s.world_; ++q) {
      if (!s.ranks_[q].joined)
        absent.push_back(q);
      else if (!s.ranks_[q].has_info)
        silent.push_back(q);
    }
    std::string text = fmt::format("hello: ");
    if (!absent.empty())
      text += fmt::format("{} of {} did not join within {:g} s", rank_list(absent), s.world_,
                          timeout_s);
    if (!silent.empty())
      text += fmt::format("{}{} of {} joined but sent no hello within {:g} s",
                          absent.empty() ? "" : "; ", rank_list(silent), s.world_, timeout_s);
    throw Error(text);
  }
  std::vector<PeerInfo> table;
  for (const auto& k : s.ranks_)
    table.push_back(k.info);
  return table;
}

std::string ControlPlane::broadcast(const std::string& payload, double timeout_s) {
  Impl& s = *impl_;
  const auto deadline = deadline_after(timeout_s);
  std::unique_lock lock(s.mu_);
  if (s.rank_ > 0) {
    s.cv_.wait_until(lock, deadline, [&] { return !s.bcasts_.empty() || s.ranks_[0].dead; });
    if (s.bcasts_.empty()) {
      s.throw_if_dead_locked("broadcast");
      throw Error(fmt::format("broadcast: nothing from rank 0 at {} within {:g} s",
                              to_string(s.root_), timeout_s));
    }
    std::string got = std::move(s.bcasts_.front());
    s.bcasts_.pop_front();
    return got;
  }
  if (payload.size() > kMaxPayload)
    throw Error(fmt::format("broadcast: {} bytes, at most {}", payload.size(), kMaxPayload));
  const auto all_connected = [&] {
    for (int q = 1; q < s.world_; ++q)
      if (s.conn_of_[q] == nullptr) return false;
    return true;
  };
  s.cv_.wait_until(lock, deadline, [&] { return all_connected() || s.any_dead_locked(); });
  s.throw_if_dead_locked("broadcast");
  if (!all_connected()) {
    std::vector<int> absent;
    for (int q = 1; q < s.world_; ++q)
      if (s.conn_of_[q] == nullptr) absent.push_back(q);
    throw Error(fmt::format("broadcast: {} of {} not connected within {:g} s", rank_list(absent),
                            s.world_, timeout_s));
  }
  const std::string frame = Out(Msg::kBcast).str(payload).done();
  for (int q = 1; q < s.world_; ++q)
    s.send_locked(q, frame);
  return payload;
}

void ControlPlane::step(int64_t step, std::string_view what) {
  Impl& s = *impl_;
  std::lock_guard lock(s.mu_);
  auto& mine = s.ranks_[s.rank_];
  mine.step = step;
  mine.what.assign(what.substr(0, kMaxWhat));
  // Coalesce: only the latest step matters, so one wake-up per burst of steps.
  if (s.rank_ > 0 && !s.step_pending_) {
    s.step_pending_ = true;
    s.wake();
  }
}

std::vector<int> ControlPlane::dead_ranks() const {
  std::lock_guard lock(impl_->mu_);
  return impl_->dead_locked();
}

std::string ControlPlane::death_report() const {
  std::lock_guard lock(impl_->mu_);
  std::vector<std::string> deaths;
  for (int q : impl_->dead_locked())
    deaths.push_back(impl_->death_locked(q));
  return fmt::format("{}", fmt::join(deaths, "; "));
}

std::string ControlPlane::describe_rank(int rank) const {
  std::lock_guard lock(impl_->mu_);
  return impl_->describe_locked(rank);
}

std::vector<int64_t> ControlPlane::steps(double timeout_s) {
  Impl& s = *impl_;
  const auto deadline = deadline_after(timeout_s);
  std::unique_lock lock(s.mu_);
  if (s.rank_ > 0 && s.conn_of_[0] != nullptr) {
    const uint32_t id = ++s.steps_request_;
    s.send_locked(0, Out(Msg::kStepsReq).u32(id).done());
    s.cv_.wait_until(lock, deadline, [&] { return s.steps_reply_ >= id || !s.conn_of_[0]; });
  }
  std::vector<int64_t> out;
  for (const auto& k : s.ranks_)
    out.push_back(k.step);
  return out;
}

std::vector<double> ControlPlane::silence_s() const {
  std::lock_guard lock(impl_->mu_);
  return impl_->silence_locked();
}

std::vector<double> ControlPlane::silences(double timeout_s) {
  Impl& s = *impl_;
  const auto deadline = deadline_after(timeout_s);
  std::unique_lock lock(s.mu_);
  if (s.rank_ == 0 || s.conn_of_[0] == nullptr) return s.silence_locked();
  const uint32_t id = ++s.steps_request_;
  s.send_locked(0, Out(Msg::kStepsReq).u32(id).done());
  s.cv_.wait_until(lock, deadline, [&] { return s.steps_reply_ >= id || !s.conn_of_[0]; });
  std::vector<double> out = s.silence_locked();
  if (s.steps_reply_ < id) return out;  // rank 0 silent or gone: only our own view holds
  for (int q = 1; q < s.world_; ++q)
    if (q != s.rank_) out[q] = s.ranks_[q].dead ? -1.0 : s.remote_silence_[q];
  return out;
}

std::string ControlPlane::describe_silent(double min_silence_s, double timeout_s) {
  const std::vector<double> silence = silences(timeout_s);
  std::lock_guard lock(impl_->mu_);
  std::vector<std::string> clauses;
  for (int q = 0; q < impl_->world_; ++q) {
    const Impl::Rank& k = impl_->ranks_[q];
    if (q == impl_->rank_ || k.dead || k.bye || silence[q] <= min_silence_s) continue;
    std::string state = "stopped or hung";
    if (k.step >= 0)
      state += k.what.empty() ? fmt::format("; last step {}", k.step)
                              : fmt::format("; last step {}: {}", k.step, k.what);
    clauses.push_back(fmt::format("{} silent for {:.1f} s ({})", impl_->describe_locked(q, false),
                                  silence[q], state));
  }
  return fmt::format("{}", fmt::join(clauses, "; "));
}

std::vector<int> ControlPlane::bye(double timeout_s) {
  Impl& s = *impl_;
  const auto deadline = deadline_after(timeout_s);
  std::unique_lock lock(s.mu_);
  std::vector<int> missing;
  if (s.rank_ == 0) {
    const auto done = [&] {
      for (int q = 1; q < s.world_; ++q)
        if (!s.ranks_[q].bye && !s.ranks_[q].dead) return false;
      return true;
    };
    s.cv_.wait_until(lock, deadline, done);
    for (int q = 1; q < s.world_; ++q)
      if (!s.ranks_[q].bye) missing.push_back(q);
    s.ranks_[0].bye = true;
    const std::string frame = Out(Msg::kBye).done();
    for (int q = 1; q < s.world_; ++q)
      s.send_locked(q, frame);
  } else {
    s.send_locked(0, Out(Msg::kBye).done());
    s.ranks_[s.rank_].bye = true;
    s.cv_.wait_until(lock, deadline, [&] { return s.ranks_[0].bye || !s.conn_of_[0]; });
    if (!s.ranks_[0].bye) missing.push_back(0);
  }
  // Our BYE must reach the kernel before the caller closes the sockets.
  s.cv_.wait_until(lock, Clock::now() + std::chrono::seconds(2),
                   [&] { return s.drained_locked(); });
  return missing;
}

std::vector<std::string> ControlPlane::errors() const {
  std::lock_guard lock(impl_->mu_);
  return impl_->errors_;
}

}  // namespace gpuvs::comm
