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
    throw Error(fmt::format("cannot allocate {} on the GPU ({}; {} free of {})",
                            format_bytes_binary(static_cast<int64_t>(bytes)),
                            cudaGetErrorString(err), format_bytes_binary(int64_t(free_b)),
                            format_bytes_binary(int64_t(total_b))));
  }
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) cudaFree(ptr_);
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
