#include "comm/watchdog.h"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "comm/control.h"
#include "core/host.h"

namespace gpuvs::comm {

Watchdog::Watchdog(double timeout_s, ControlPlane* control, std::function<void()> abort_all,
                   double grace_s)
    : timeout_s_(timeout_s),
      grace_s_(grace_s),
      control_(control),
      abort_all_(std::move(abort_all)),
      thread_([this] { loop(); }) {}

Watchdog::~Watchdog() {
  // An abort in flight finishes first (the loop, still running, ends the process
  // should it never finish).
  std::thread aborter;
  {
    std::lock_guard lock(mutex_);
    aborter = std::move(aborter_);
  }
  if (aborter.joinable()) aborter.join();
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void Watchdog::enter(const std::string* what) {
  what_.store(what, std::memory_order_relaxed);
  deadline_.store(monotonic_seconds() + timeout_s_, std::memory_order_release);
}

void Watchdog::leave() {
  deadline_.store(0, std::memory_order_release);
}

std::string Watchdog::message() const {
  std::lock_guard lock(mutex_);
  return message_;
}

std::string Watchdog::reason(double now, double deadline) {
  const std::string* what = what_.load(std::memory_order_relaxed);
  const std::string doing = what != nullptr ? *what : std::string("an NCCL call");
  if (control_ != nullptr && !control_->dead_ranks().empty()) {
    return fmt::format("{}; this rank was in {}; communicator aborted", control_->death_report(),
                       doing);
  }
  if (now <= deadline) return {};
  std::string why = fmt::format("{} did not return within {:g} s (--timeout)", doing, timeout_s_);
  if (control_ != nullptr) {
    const std::string silent = control_->describe_silent(3.0, 1.0);
    if (!silent.empty()) why += "; did not arrive: " + silent;
  }
  return why + "; communicator aborted";
}

void Watchdog::loop() {
  std::unique_lock lock(mutex_);
  double fired_at = 0;
  while (!stop_) {
    wake_.wait_for(lock, std::chrono::milliseconds(10));
    if (stop_) break;
    const double t = monotonic_seconds();
    if (fired_.load()) {
      // Over the grace period with the abort, or the aborted call, still not back.
      const bool stuck = !abort_done_.load() || deadline_.load() != 0;
      if (stuck && t - fired_at > grace_s_) {
        std::fprintf(stderr,
                     "gpuvs: error: %s; NCCL did not return %g s after the abort: exiting\n",
                     message_.c_str(), grace_s_);
        std::fflush(stderr);
        ::_exit(1);
      }
      continue;
    }
    const double deadline = deadline_.load(std::memory_order_acquire);
    if (deadline == 0) continue;
    lock.unlock();
    std::string why = reason(t, deadline);
    lock.lock();
    if (why.empty()) continue;
    message_ = std::move(why);
    fired_.store(true, std::memory_order_release);
    fired_at = t;
    // The abort runs apart: ncclCommAbort may wait on the blocked call, and this
    // thread must stay free to end the process after the grace period.
    aborter_ = std::thread([this] {
      abort_all_();
      abort_done_.store(true);
    });
  }
}

}  // namespace gpuvs::comm
