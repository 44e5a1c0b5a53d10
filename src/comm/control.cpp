#include "comm/control.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "comm/control_impl.h"
#include "core/error.h"

namespace gpuvs::comm {

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
