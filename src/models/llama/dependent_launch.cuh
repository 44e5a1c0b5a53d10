// Programmatic dependent launch for the decoder's kernels (compute capability 9.0 and
// later): a kernel launched with `dependent` may start while the kernel before it in
// the stream is still running; it calls wait_for_previous_kernel() before it touches
// anything that kernel reads or writes, and let_next_kernel_start() once the kernel
// after it may be scheduled. A decode step is a chain of short kernels, so the launch
// gaps between them are a visible part of its time; this hides them. Without the
// launch attribute, or below 9.0, both calls are no-ops and the stream orders as usual.
#pragma once

#include <cuda_runtime_api.h>

#include <utility>

#include "gpu/check.h"

namespace gpuvs::models::llama {

__device__ __forceinline__ void wait_for_previous_kernel() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ void let_next_kernel_start() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// kernel<<<grid, block, smem, s>>>(args...), started early when `dependent`.
template <class... Params, class... Args>
void launch_kernel(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t s,
                   bool dependent, Args&&... args) {
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = s;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = dependent ? 1 : 0;
  GPUVS_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...));
}

}  // namespace gpuvs::models::llama
