#include "gpu/device.h"

#include <fmt/format.h>

#include "core/units.h"
#include "gpu/check.h"

namespace gpuvs {

DeviceScope::DeviceScope(int device) {
  GPUVS_CUDA_CHECK(cudaGetDevice(&previous_));
  GPUVS_CUDA_CHECK(cudaSetDevice(device));
}

DeviceScope::~DeviceScope() {
  cudaSetDevice(previous_);
}

DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(bytes) {
  if (bytes == 0) return;
  const cudaError_t err = cudaMalloc(&ptr_, bytes);
  if (err != cudaSuccess) {
    ptr_ = nullptr;
    cudaGetLastError();  // out-of-memory is not sticky: clear it for the next caller
    const auto [free_b, total_b] = device_memory_info();
    std::string message =
        fmt::format("cannot allocate {} on the GPU ({}; {} free of {})",
                    format_bytes_binary(static_cast<int64_t>(bytes)), cudaGetErrorString(err),
                    format_bytes_binary(int64_t(free_b)), format_bytes_binary(int64_t(total_b)));
    if (err == cudaErrorMemoryAllocation) throw OutOfMemoryError(std::move(message));
    throw Error(std::move(message));
  }
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) cudaFree(ptr_);
}

std::optional<DeviceBuffer> DeviceBuffer::try_allocate(size_t bytes) {
  void* ptr = nullptr;
  const cudaError_t err = cudaMalloc(&ptr, bytes);
  if (err == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    return std::nullopt;
  }
  GPUVS_CUDA_CHECK(err);
  DeviceBuffer b;
  b.ptr_ = ptr;
  b.bytes_ = bytes;
  return b;
}

Stream::Stream() {
  GPUVS_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
}

Stream::~Stream() {
  if (stream_) cudaStreamDestroy(stream_);
}

void Stream::synchronize() const {
  GPUVS_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

Event::Event() {
  GPUVS_CUDA_CHECK(cudaEventCreate(&event_));
}

Event::Event(unsigned flags) {
  GPUVS_CUDA_CHECK(cudaEventCreateWithFlags(&event_, flags));
}

Event::~Event() {
  if (event_) cudaEventDestroy(event_);
}

void Event::record(cudaStream_t stream) const {
  GPUVS_CUDA_CHECK(cudaEventRecord(event_, stream));
}

void Event::synchronize() const {
  GPUVS_CUDA_CHECK(cudaEventSynchronize(event_));
}

double Event::seconds_since(const Event& start) const {
  float ms = 0;
  GPUVS_CUDA_CHECK(cudaEventElapsedTime(&ms, start.event_, event_));
  return ms * 1e-3;
}

std::pair<size_t, size_t> device_memory_info() {
  size_t free_b = 0, total_b = 0;
  if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) {
    cudaGetLastError();
    return {0, 0};
  }
  return {free_b, total_b};
}

}  // namespace gpuvs

namespace gpuvs {

PinnedHostBuffer::PinnedHostBuffer(size_t bytes, bool mapped) : bytes_(bytes), mapped_(mapped) {
  if (bytes == 0) return;
  const unsigned flags = cudaHostAllocPortable | (mapped ? cudaHostAllocMapped : 0u);
  const cudaError_t err = cudaHostAlloc(&ptr_, bytes, flags);
  if (err != cudaSuccess) {
    ptr_ = nullptr;
    cudaGetLastError();
    throw Error(fmt::format("cannot allocate {} of pinned host memory ({})",
                            format_bytes_binary(static_cast<int64_t>(bytes)),
                            cudaGetErrorString(err)));
  }
}

PinnedHostBuffer::~PinnedHostBuffer() {
  if (ptr_) cudaFreeHost(ptr_);
}

void* PinnedHostBuffer::device_pointer() const {
  if (!mapped_) throw Error("pinned host buffer is not mapped into the device address space");
  void* device_ptr = nullptr;
  GPUVS_CUDA_CHECK(cudaHostGetDevicePointer(&device_ptr, ptr_, 0));
  return device_ptr;
}

bool can_access_peer(int device, int peer) {
  int can = 0;
  if (cudaDeviceCanAccessPeer(&can, device, peer) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return can != 0;
}

PeerAccessScope::PeerAccessScope(int device, int peer) : device_(device), peer_(peer) {
  DeviceScope scope(device);
  const cudaError_t err = cudaDeviceEnablePeerAccess(peer, 0);
  if (err == cudaErrorPeerAccessAlreadyEnabled) {
    cudaGetLastError();  // someone else enabled it: leave it as found
    return;
  }
  GPUVS_CUDA_CHECK(err);
  enabled_here_ = true;
}

PeerAccessScope::~PeerAccessScope() {
  if (!enabled_here_) return;
  int previous = 0;
  if (cudaGetDevice(&previous) != cudaSuccess) return;
  cudaSetDevice(device_);
  cudaDeviceDisablePeerAccess(peer_);
  cudaGetLastError();
  cudaSetDevice(previous);
}

GraphExec::GraphExec(cudaStream_t stream, const std::function<void(cudaStream_t)>& enqueue) {
  GPUVS_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  try {
    enqueue(stream);
  } catch (...) {
    cudaGraph_t broken = nullptr;
    cudaStreamEndCapture(stream, &broken);
    if (broken) cudaGraphDestroy(broken);
    cudaGetLastError();
    throw;
  }
  GPUVS_CUDA_CHECK(cudaStreamEndCapture(stream, &graph_));
  cudaError_t err = cudaGraphGetNodes(graph_, nullptr, &nodes_);
  if (err == cudaSuccess) err = cudaGraphInstantiate(&exec_, graph_, 0);
  if (err != cudaSuccess) {
    cudaGraphDestroy(graph_);
    graph_ = nullptr;
    GPUVS_CUDA_CHECK(err);
  }
}

GraphExec::~GraphExec() {
  if (exec_) cudaGraphExecDestroy(exec_);
  if (graph_) cudaGraphDestroy(graph_);
}

void GraphExec::launch(cudaStream_t stream) const {
  GPUVS_CUDA_CHECK(cudaGraphLaunch(exec_, stream));
}

GraphSet::GraphSet(const std::vector<cudaStream_t>& streams, const std::function<void()>& enqueue)
    : streams_(streams) {
  // Global mode: NCCL's own setup calls during capture must not be hidden from it.
  size_t begun = 0;
  cudaError_t err = cudaSuccess;
  for (; begun < streams_.size() && err == cudaSuccess; ++begun)
    err = cudaStreamBeginCapture(streams_[begun], cudaStreamCaptureModeGlobal);
  if (err == cudaSuccess) {
    try {
      enqueue();
    } catch (...) {
      for (cudaStream_t s : streams_) {
        cudaGraph_t broken = nullptr;
        cudaStreamEndCapture(s, &broken);
        if (broken) cudaGraphDestroy(broken);
      }
      cudaGetLastError();
      throw;
    }
  }
  for (size_t i = 0; i < begun; ++i) {
    cudaGraph_t g = nullptr;
    const cudaError_t end = cudaStreamEndCapture(streams_[i], &g);
    if (g) graphs_.push_back(g);
    if (err == cudaSuccess) err = end;
  }
  for (size_t i = 0; err == cudaSuccess && i < graphs_.size(); ++i) {
    cudaGraphExec_t e = nullptr;
    int device = 0;
    err = cudaStreamGetDevice(streams_[i], &device);
    if (err != cudaSuccess) break;
    DeviceScope scope(device);
    err = cudaGraphInstantiate(&e, graphs_[i], 0);
    if (err == cudaSuccess) execs_.push_back(e);
  }
  if (err != cudaSuccess) {
    release();
    GPUVS_CUDA_CHECK(err);
  }
}

GraphSet::~GraphSet() {
  release();
}

void GraphSet::release() noexcept {
  for (cudaGraphExec_t e : execs_)
    cudaGraphExecDestroy(e);
  for (cudaGraph_t g : graphs_)
    cudaGraphDestroy(g);
  execs_.clear();
  graphs_.clear();
}

void GraphSet::launch() const {
  for (size_t i = 0; i < execs_.size(); ++i) {
    int device = 0;
    GPUVS_CUDA_CHECK(cudaStreamGetDevice(streams_[i], &device));
    DeviceScope scope(device);
    GPUVS_CUDA_CHECK(cudaGraphLaunch(execs_[i], streams_[i]));
  }
}

}  // namespace gpuvs
