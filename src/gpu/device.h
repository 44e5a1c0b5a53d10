// RAII owners for CUDA resources: device memory, pinned host memory, streams,
// events, and the current-device scope. Copy is deleted everywhere; move is
// allowed. No raw cudaMalloc outside gpu/ (docs/design.md): everything allocates here.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

namespace gpuvs {

// Sets the current device for a scope and restores the previous one.
class DeviceScope {
 public:
  explicit DeviceScope(int device);
  ~DeviceScope();
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_ = 0;
};

// Device memory from cudaMalloc (never managed memory). Out-of-memory throws
// gpuvs::OutOfMemoryError (other failures gpuvs::Error) naming the size asked for.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes);
  ~DeviceBuffer();
  // nullopt where cudaMalloc reports out-of-memory (the error is cleared); other
  // errors throw. For probing how much memory can be had (memory.capacity).
  static std::optional<DeviceBuffer> try_allocate(size_t bytes);
  DeviceBuffer(DeviceBuffer&& other) noexcept { swap(other); }
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    DeviceBuffer(std::move(other)).swap(*this);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* get() const { return ptr_; }
  template <class T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  size_t bytes() const { return bytes_; }

 private:
  void swap(DeviceBuffer& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(bytes_, o.bytes_);
  }
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

class Stream {
 public:
  Stream();  // non-blocking with respect to the legacy default stream
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return stream_; }
  void synchronize() const;

 private:
  cudaStream_t stream_ = nullptr;
};

class Event {
 public:
  Event();
  // cudaEventCreateWithFlags, e.g. cudaEventDisableTiming for fork/join events.
  explicit Event(unsigned flags);
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const { return event_; }
  void record(cudaStream_t stream) const;
  void synchronize() const;
  // Seconds from `start` to this event (both recorded and complete).
  double seconds_since(const Event& start) const;

 private:
  cudaEvent_t event_ = nullptr;
};

// Free and total device memory of the current device, in bytes.
std::pair<size_t, size_t> device_memory_info();

// Page-locked host memory from cudaHostAlloc, portable (pinned for every device).
// With `mapped`, kernels reach it through device_pointer(): zero-copy access over the
// host link. Never managed memory.
class PinnedHostBuffer {
 public:
  PinnedHostBuffer() = default;
  PinnedHostBuffer(size_t bytes, bool mapped);
  ~PinnedHostBuffer();
  PinnedHostBuffer(PinnedHostBuffer&& other) noexcept { swap(other); }
  PinnedHostBuffer& operator=(PinnedHostBuffer&& other) noexcept {
    PinnedHostBuffer(std::move(other)).swap(*this);
    return *this;
  }
  PinnedHostBuffer(const PinnedHostBuffer&) = delete;
  PinnedHostBuffer& operator=(const PinnedHostBuffer&) = delete;

  void* get() const { return ptr_; }
  template <class T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  size_t bytes() const { return bytes_; }
  // The address kernels use for a mapped buffer; throws when not mapped.
  void* device_pointer() const;

 private:
  void swap(PinnedHostBuffer& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(bytes_, o.bytes_);
    std::swap(mapped_, o.mapped_);
  }
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
  bool mapped_ = false;
};

// Whether `device` can address `peer`'s memory directly (NVLink or PCIe P2P).
bool can_access_peer(int device, int peer);

// Lets `device` access `peer`'s memory for the scope (cudaDeviceEnablePeerAccess);
// disables it again only if this scope enabled it. Throws when the pair cannot.
class PeerAccessScope {
 public:
  PeerAccessScope(int device, int peer);
  ~PeerAccessScope();
  PeerAccessScope(const PeerAccessScope&) = delete;
  PeerAccessScope& operator=(const PeerAccessScope&) = delete;

 private:
  int device_ = 0;
  int peer_ = 0;
  bool enabled_here_ = false;
};

// An instantiated CUDA graph, captured from the work `enqueue` puts on `stream`
// (which must not be the legacy default stream).
class GraphExec {
 public:
  GraphExec(cudaStream_t stream, const std::function<void(cudaStream_t)>& enqueue);
  ~GraphExec();
  GraphExec(const GraphExec&) = delete;
  GraphExec& operator=(const GraphExec&) = delete;
  void launch(cudaStream_t stream) const;
  size_t nodes() const { return nodes_; }

 private:
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
  size_t nodes_ = 0;
};

// CUDA graphs captured together from several streams (one per GPU) while one call
// enqueues work on all of them, e.g. a grouped NCCL collective over every local GPU.
// One graph per stream; launch() replays each on its stream.
class GraphSet {
 public:
  GraphSet(const std::vector<cudaStream_t>& streams, const std::function<void()>& enqueue);
  ~GraphSet();
  GraphSet(const GraphSet&) = delete;
  GraphSet& operator=(const GraphSet&) = delete;
  void launch() const;

 private:
  void release() noexcept;
  std::vector<cudaStream_t> streams_;
  std::vector<cudaGraph_t> graphs_;
  std::vector<cudaGraphExec_t> execs_;
};

}  // namespace gpuvs
