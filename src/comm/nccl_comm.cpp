#include "comm/nccl_comm.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <utility>

#include "comm/control.h"
#include "comm/watchdog.h"
#include "core/host.h"
#include "core/units.h"
#include "gpu/check.h"

namespace gpuvs::comm {

namespace {

std::string nccl_error_text(ncclComm_t comm, ncclResult_t r) {
  const char* last = ncclGetLastError(comm);
  std::string text = ncclGetErrorString(r);
  if (last != nullptr && *last != '\0') text += fmt::format(" ({})", last);
  return text;
}

}  // namespace

NcclGroup::Call::Call(NcclGroup& group, const std::string& what) : group_(group) {
  group_.watchdog_->enter(&what);
}

NcclGroup::Call::~Call() {
  group_.watchdog_->leave();
}

std::string new_unique_id() {
  ncclUniqueId id;
  GPUVS_NCCL_CHECK(ncclGetUniqueId(&id));
  return std::string(id.internal, sizeof(id.internal));
}

CommBuffer::CommBuffer(size_t bytes, bool nccl_mem_alloc) {
  if (!nccl_mem_alloc) {
    cuda_ = DeviceBuffer(bytes);
    return;
  }
  const ncclResult_t r = ncclMemAlloc(&nccl_, std::max<size_t>(bytes, 1));
  if (r != ncclSuccess) {
    nccl_ = nullptr;
    cudaGetLastError();  // an out-of-memory underneath is not sticky
    throw Error(fmt::format("ncclMemAlloc could not allocate {}: {}",
                            format_bytes_binary(static_cast<int64_t>(bytes)),
                            ncclGetErrorString(r)));
  }
}

CommBuffer::CommBuffer(CommBuffer&& other) noexcept
    : nccl_(std::exchange(other.nccl_, nullptr)), cuda_(std::move(other.cuda_)) {}

CommBuffer::~CommBuffer() {
  if (nccl_ != nullptr) ncclMemFree(nccl_);
}

NcclGroup::NcclGroup(const GroupSpec& spec) : spec_(spec) {
  if (spec_.unique_id.size() != sizeof(ncclUniqueId)) {
    throw Error(fmt::format("NCCL unique id has {} bytes, expected {}", spec_.unique_id.size(),
                            sizeof(ncclUniqueId)));
  }
  ncclUniqueId id;
  std::memcpy(id.internal, spec_.unique_id.data(), sizeof(id.internal));
  for (int device : spec_.devices) {
    DeviceScope scope(device);
    streams_.push_back(std::make_unique<Stream>());
    scratch_.emplace_back(sizeof(double));
  }
  comms_.assign(spec_.devices.size(), nullptr);
  watchdog_ = std::make_unique<Watchdog>(spec_.timeout_s, spec_.control, [this] {
    bool expected = false;
    if (!aborted_.compare_exchange_strong(expected, true)) return;
    for (ncclComm_t c : comms_)
      if (c != nullptr) ncclCommAbort(c);
  });
  // Blocking (see the header), and otherwise NCCL's defaults, as applications get
  // them. (nccl-tests 2.19 sets nvlinkCentricSched = 1; on 2x H200 it changed no
  // all_reduce figure from 8 B to 16 MiB beyond run-to-run noise, so gpuvs leaves it
  // at NCCL's default.)
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  const std::string creating = "communicator creation";
  Call call(*this, creating);
  GPUVS_NCCL_CHECK(ncclGroupStart());
  for (size_t i = 0; i < spec_.devices.size(); ++i) {
    DeviceScope scope(spec_.devices[i]);
    const ncclResult_t r = ncclCommInitRankConfig(&comms_[i], spec_.world_size, id,
                                                  spec_.first_rank + static_cast<int>(i), &config);
    if (r != ncclSuccess && r != ncclInProgress) {
      ncclGroupEnd();
      abort(fmt::format("NCCL could not start a communicator for rank {} on GPU {}: {}",
                        spec_.first_rank + i, spec_.devices[i], nccl_error_text(nullptr, r)));
    }
  }
  check_enqueue(ncclGroupEnd(), "communicator creation");
}

NcclGroup::~NcclGroup() {
  if (aborted_) {
    watchdog_.reset();  // waits for an abort in flight, which reads comms_
    return;             // ncclCommAbort freed them
  }
  // Healthy: finalize (flushes outstanding work) and destroy, under the watchdog.
  const std::string ending = "communicator teardown";
  try {
    Call call(*this, ending);
    for (ncclComm_t c : comms_) {
      if (c == nullptr || aborted_) continue;
      if (ncclCommFinalize(c) == ncclSuccess) {
        ncclCommDestroy(c);
      } else {
        ncclCommAbort(c);
      }
    }
  } catch (...) {
    // A destructor never throws; the watchdog ends a hung teardown.
  }
  watchdog_.reset();  // before comms_ goes: an abort it started reads it
}

std::vector<cudaStream_t> NcclGroup::streams() const {
  std::vector<cudaStream_t> out;
  for (const auto& s : streams_)
    out.push_back(s->get());
  return out;
}

void NcclGroup::abort(const std::string& message, bool nccl_refused) {
  bool expected = false;
  if (aborted_.compare_exchange_strong(expected, true)) {
    for (ncclComm_t c : comms_)
      if (c != nullptr) ncclCommAbort(c);
  }
  throw CollectiveAbort(message, nccl_refused);
}

std::string NcclGroup::describe_laggards() {
  if (spec_.control == nullptr) {
    return "every rank is a GPU of this process; NCCL did not complete on them";
  }
  // A rank alive but stopped or hung no longer beats: name it first.
  const std::string silent = spec_.control->describe_silent(3.0, 1.0);
  if (!silent.empty()) return "did not arrive: " + silent;
  const std::vector<int64_t> steps = spec_.control->steps(1.0);
  int64_t ahead = -1;
  for (int64_t s : steps)
    ahead = std::max(ahead, s);
  std::string behind;
  for (size_t r = 0; r < steps.size(); ++r) {
    if (steps[r] < ahead) {
      behind += fmt::format("{}{}", behind.empty() ? "" : "; ",
                            spec_.control->describe_rank(static_cast<int>(r)));
    }
  }
  if (behind.empty()) return "every rank reached the same step: the collective itself stalled";
  return "did not arrive: " + behind;
}

void NcclGroup::abort_nccl_error(const std::string& message, std::string_view what) {
  // NCCL may see a peer's death (a broken connection) before the control connection
  // does: give the control connection a moment to say who died.
  for (int k = 0; spec_.control != nullptr && k < 100; ++k) {
    if (!spec_.control->dead_ranks().empty()) abort_for_dead_peer(what);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  abort(message, true);
}

void NcclGroup::abort_for_dead_peer(std::string_view what) {
  abort(fmt::format("{}; this rank was in {}; communicator aborted", spec_.control->death_report(),
                    what));
}

void NcclGroup::poll_health(std::string_view what, double started_s) {
  if (watchdog_->fired()) throw CollectiveAbort(watchdog_->message());
  // A dead peer first: it names the rank, where NCCL only sees a broken connection.
  if (spec_.control != nullptr && !spec_.control->dead_ranks().empty()) abort_for_dead_peer(what);
  for (size_t i = 0; i < comms_.size(); ++i) {
    ncclResult_t state = ncclSuccess;
    const ncclResult_t r = ncclCommGetAsyncError(comms_[i], &state);
    if (r != ncclSuccess) state = r;
    if (state != ncclSuccess && state != ncclInProgress) {
      abort_nccl_error(fmt::format("NCCL error on rank {} during {}: {}", rank(static_cast<int>(i)),
                                   what, nccl_error_text(comms_[i], state)),
                       what);
    }
  }
  if (monotonic_seconds() - started_s > spec_.timeout_s) {
    const std::string laggards = describe_laggards();
    abort(fmt::format("{} did not finish within {:g} s (--timeout); {}; communicator aborted", what,
                      spec_.timeout_s, laggards));
  }
}

void NcclGroup::check_enqueue(ncclResult_t result, std::string_view what) {
  if (result == ncclSuccess) return;
  if (watchdog_->fired()) throw CollectiveAbort(watchdog_->message());
  if (result == ncclInProgress) {
    // Only non-blocking communicators answer this; ours are blocking.
    abort(fmt::format("NCCL answered 'in progress' to {} on a blocking communicator", what));
  }
  abort_nccl_error(
      fmt::format("NCCL refused {}: {}", what, nccl_error_text(comms_.front(), result)), what);
}

void NcclGroup::wait(std::string_view what) {
  const double t0 = monotonic_seconds();
  double next_health = t0 + 1e-3;
  size_t done = 0;
  // Streams finish in order of no importance; count those drained.
  std::vector<bool> finished(streams_.size(), false);
  while (done < streams_.size()) {
    for (size_t i = 0; i < streams_.size(); ++i) {
      if (finished[i]) continue;
      const cudaError_t e = cudaStreamQuery(streams_[i]->get());
      if (e == cudaSuccess) {
        finished[i] = true;
        ++done;
      } else if (e != cudaErrorNotReady) {
        GPUVS_CUDA_CHECK(e);
      }
    }
    if (done == streams_.size()) break;
    const double t = monotonic_seconds();
    if (t >= next_health) {
      poll_health(what, t0);
      next_health = t + 1e-3;
    }
  }
}

double NcclGroup::all_reduce_host(const std::vector<double>& per_local, ncclRedOp_t op,
                                  std::string_view what) {
  const std::string doing(what);
  {
    Call call(*this, doing);  // the launch only: wait() polls on its own
    GPUVS_NCCL_CHECK(ncclGroupStart());
    for (size_t i = 0; i < comms_.size(); ++i) {
      DeviceScope scope(spec_.devices[i]);
      GPUVS_CUDA_CHECK(cudaMemcpyAsync(scratch_[i].get(), &per_local.at(i), sizeof(double),
                                       cudaMemcpyHostToDevice, streams_[i]->get()));
      const ncclResult_t r = ncclAllReduce(scratch_[i].get(), scratch_[i].get(), 1, ncclDouble, op,
                                           comms_[i], streams_[i]->get());
      if (r != ncclSuccess) {
        ncclGroupEnd();
        check_enqueue(r, what);
      }
    }
    check_enqueue(ncclGroupEnd(), what);
  }
  wait(what);
  double out = 0;
  DeviceScope scope(spec_.devices.front());
  GPUVS_CUDA_CHECK(
      cudaMemcpy(&out, scratch_.front().get(), sizeof(double), cudaMemcpyDeviceToHost));
  return out;
}

double NcclGroup::max_host(double value, std::string_view what) {
  return all_reduce_host(std::vector<double>(comms_.size(), value), ncclMax, what);
}

double NcclGroup::broadcast_host(double value, std::string_view what) {
  // Every rank but 0 contributes 0 to a sum: rank 0's value everywhere.
  std::vector<double> per_local(comms_.size(), 0.0);
  if (spec_.first_rank == 0) per_local[0] = value;
  return all_reduce_host(per_local, ncclSum, what);
}

}  // namespace gpuvs::comm
