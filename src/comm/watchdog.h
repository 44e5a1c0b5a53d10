// The backstop of "never hangs" for host calls into NCCL (comm/nccl_comm.h).
//
// NCCL's blocking calls (creating a communicator; a launch that waits for room while
// a peer has stopped) can block the calling thread. The watchdog thread watches the
// call that enter()/leave() mark: past the deadline, or once the control connection
// reports a dead peer, it runs `abort_all` (ncclCommAbort of every communicator) on a
// thread of its own, which makes the blocked call return with an error. Should the
// abort not finish within the grace period (ncclCommAbort can itself wait on the
// blocked thread), the watchdog prints why on stderr and ends the process with exit
// code 1: a hang is never the outcome. The destructor waits for an abort in flight
// (or for that exit), so `abort_all` never outlives what it aborts. Plain C++,
// tested on machines without a GPU.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace gpuvs::comm {

class ControlPlane;

class Watchdog {
 public:
  Watchdog(double timeout_s, ControlPlane* control, std::function<void()> abort_all,
           double grace_s = 10);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // A blocking call begins; `what` ("all_reduce 1 MiB") must outlive the call.
  void enter(const std::string* what);
  void leave();
  bool fired() const { return fired_.load(std::memory_order_acquire); }
  std::string message() const;  // why it fired

 private:
  void loop();
  std::string reason(double now, double deadline);

  const double timeout_s_;
  const double grace_s_;
  ControlPlane* control_;
  std::function<void()> abort_all_;
  std::atomic<double> deadline_{0};
  std::atomic<const std::string*> what_{nullptr};
  std::atomic<bool> fired_{false};
  std::atomic<bool> abort_done_{false};
  std::thread aborter_;  // runs abort_all_; set once, under mutex_
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::string message_;
  std::thread thread_;  // last: started once every member above exists
};

}  // namespace gpuvs::comm
