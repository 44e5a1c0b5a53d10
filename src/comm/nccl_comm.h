// NCCL communicators that never hang (docs/design.md, comm/; docs/collectives.md).
//
// An NcclGroup owns the communicators of this process: one per local GPU when one
// process drives them all, one when each rank is its own process. Every wait for the
// GPU polls the streams, NCCL's asynchronous error, the control connection (a peer
// process that died) and a deadline; on any of them the communicators are aborted
// (ncclCommAbort) and a CollectiveAbort is thrown that names the rank(s) that did
// not arrive.
// The communicators are blocking, as applications and nccl-tests use them: NCCL's
// non-blocking mode hands every group launch to a new thread (~100 us per operation
// measured on 2x H200), which would swamp small-message latency. A host call into
// NCCL that blocks (creation, a launch waiting on a peer) is covered by a watchdog
// thread instead: past the deadline, or when a peer dies, it aborts the
// communicators, which makes the call return; should even that not return within
// a grace period, it prints why and ends the process with exit code 1.
#pragma once

#include <nccl.h>

#include <atomic>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/run_file.h"
#include "gpu/device.h"

namespace gpuvs::comm {

class ControlPlane;

// The run cannot go on: communicators aborted (timeout, dead peer, NCCL error).
// The session stops, keeps the results so far, and exits 1.
// `partial` carries the results measured before the abort, so none is lost.
class CollectiveAbort : public Error {
 public:
  explicit CollectiveAbort(std::string message, bool nccl_refused = false)
      : Error(std::move(message)), nccl_refused_(nccl_refused) {}
  // NCCL itself reported an error (e.g. no algorithm for this setting), as opposed
  // to a timeout or a dead peer.
  bool nccl_refused() const { return nccl_refused_; }
  std::vector<Result> partial;

 private:
  bool nccl_refused_;
};

// Device memory for collective send and receive buffers: from ncclMemAlloc (as
// nccl-tests allocates since NCCL 2.19: cuMem-backed, ready for NVLink registration)
// or from cudaMalloc (as most applications do). Allocated on the current device.
class CommBuffer {
 public:
  CommBuffer(size_t bytes, bool nccl_mem_alloc);
  ~CommBuffer();
  CommBuffer(CommBuffer&& other) noexcept;
  CommBuffer& operator=(CommBuffer&&) = delete;
  CommBuffer(const CommBuffer&) = delete;
  CommBuffer& operator=(const CommBuffer&) = delete;

  void* get() const { return nccl_ != nullptr ? nccl_ : cuda_.get(); }
  template <class T>
  T* as() const {
    return static_cast<T*>(get());
  }

 private:
  void* nccl_ = nullptr;  // from ncclMemAlloc
  DeviceBuffer cuda_;     // or from cudaMalloc
};

// The 128 bytes every rank needs to join one communicator (ncclGetUniqueId).
std::string new_unique_id();

struct GroupSpec {
  std::vector<int> devices;  // local CUDA devices, one communicator each
  int world_size = 0;        // ranks in the communicator
  int first_rank = 0;        // rank of devices[0]; the others follow
  std::string unique_id;     // from new_unique_id() on rank 0, shared with every rank
  double timeout_s = 60;
  ControlPlane* control = nullptr;  // multi-process: peers' deaths and progress
};

class Watchdog;  // comm/watchdog.h

class NcclGroup {
 public:
  // Creates the communicators (non-blocking) and waits for them within the timeout.
  explicit NcclGroup(const GroupSpec& spec);
  ~NcclGroup();  // destroy when healthy, abort otherwise; never throws
  NcclGroup(const NcclGroup&) = delete;
  NcclGroup& operator=(const NcclGroup&) = delete;

  int local_count() const { return static_cast<int>(comms_.size()); }
  int world_size() const { return spec_.world_size; }
  int rank(int local) const { return spec_.first_rank + local; }
  int device(int local) const { return spec_.devices[local]; }
  ncclComm_t comm(int local) const { return comms_[local]; }
  cudaStream_t stream(int local) const { return streams_[local]->get(); }
  std::vector<cudaStream_t> streams() const;

  // Marks a blocking host call into NCCL for the watchdog (cheap: two atomics).
  // `what` must outlive the guard.
  class Call {
   public:
    Call(NcclGroup& group, const std::string& what);
    ~Call();
    Call(const Call&) = delete;
    Call& operator=(const Call&) = delete;

   private:
    NcclGroup& group_;
  };

  // The result of an NCCL host call: anything but success aborts (a refusal, or the
  // watchdog's abort surfacing) and throws.
  void check_enqueue(ncclResult_t result, std::string_view what);
  // Wait for every local stream to drain (spinning on cudaStreamQuery, as nccl-tests
  // does, so small-message latency is not inflated by sleeps).
  void wait(std::string_view what);
  // Sum or max over every rank of one double per local GPU, for agreeing on timings
  // and checks (`per_local` has local_count() entries).
  double all_reduce_host(const std::vector<double>& per_local, ncclRedOp_t op,
                         std::string_view what);
  // The same value from every local GPU: max over ranks.
  double max_host(double value, std::string_view what);
  // Rank 0's value on every rank.
  double broadcast_host(double value, std::string_view what);

  // Aborts the communicators and throws CollectiveAbort with `message`.
  [[noreturn]] void abort(const std::string& message, bool nccl_refused = false);
  bool aborted() const { return aborted_; }

 private:
  // Throws (after aborting) when NCCL reported an error, a peer died or the
  // deadline passed; `what` names the operation in flight.
  void poll_health(std::string_view what, double started_s);
  std::string describe_laggards();
  [[noreturn]] void abort_for_dead_peer(std::string_view what);
  [[noreturn]] void abort_nccl_error(const std::string& message, std::string_view what);

  GroupSpec spec_;
  std::unique_ptr<Watchdog> watchdog_;
  std::vector<ncclComm_t> comms_;
  std::vector<std::unique_ptr<Stream>> streams_;
  std::vector<DeviceBuffer> scratch_;  // one double per local GPU
  std::atomic<bool> aborted_{false};
};

}  // namespace gpuvs::comm
