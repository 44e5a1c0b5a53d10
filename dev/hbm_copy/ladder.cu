// dev ladder: HBM copy kernel variants, timed side by side on one GPU.
// Build and run (dev/README.md): nvcc -O3 -std=c++17 -arch="${ARCH:-native}" -o ladder ladder.cu
// Bytes counted: read + write (2 x array bytes). H200 peers: BabelStream copy 4.04,
// PyTorch copy 4.27 TB/s. Variants:
//  v0 cudaMemcpyAsync device-to-device (reference)
//  v1 float4 grid-stride, grid = SMs x 8 x 256 threads
//  v2 float4, one element per thread, full grid
//  v3 float4, UNROLL loads in flight then UNROLL stores, block-contiguous chunks
//  v4 as v3 with streaming hints (__ldcs / __stcs: evict-first, no L2 reuse)
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <vector>

#define CK(x)                                                             \
  do {                                                                    \
    cudaError_t err_ = (x);                                               \
    if (err_ != cudaSuccess) {                                            \
      printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(err_)); \
      exit(1);                                                            \
    }                                                                     \
  } while (0)

__global__ void v1(const float4* __restrict__ a, float4* __restrict__ b, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    b[i] = a[i];
}
__global__ void v2(const float4* __restrict__ a, float4* __restrict__ b, size_t n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) b[i] = a[i];
}
template <int U, bool STREAM>
__global__ void v3(const float4* __restrict__ a, float4* __restrict__ b, size_t n) {
  size_t base = blockIdx.x * (size_t)blockDim.x * U + threadIdx.x;
  float4 r[U];
#pragma unroll
  for (int u = 0; u < U; ++u) {
    size_t i = base + (size_t)u * blockDim.x;
    if (i < n) r[u] = STREAM ? __ldcs(a + i) : a[i];
  }
#pragma unroll
  for (int u = 0; u < U; ++u) {
    size_t i = base + (size_t)u * blockDim.x;
    if (i < n) {
      if (STREAM)
        __stcs(b + i, r[u]);
      else
        b[i] = r[u];
    }
  }
}
// grid-stride with U in flight
template <int U>
__global__ void v5(const float4* __restrict__ a, float4* __restrict__ b, size_t n) {
  size_t stride = (size_t)gridDim.x * blockDim.x * U;
  for (size_t base = blockIdx.x * (size_t)blockDim.x * U + threadIdx.x; base < n; base += stride) {
    float4 r[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      size_t i = base + (size_t)u * blockDim.x;
      if (i < n) r[u] = a[i];
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      size_t i = base + (size_t)u * blockDim.x;
      if (i < n) b[i] = r[u];
    }
  }
}

template <class F>
double time_it(F f, int reps) {
  cudaEvent_t s, e;
  CK(cudaEventCreate(&s));
  CK(cudaEventCreate(&e));
  for (int i = 0; i < 5; ++i)
    f();
  std::vector<float> t;
  for (int r = 0; r < reps; ++r) {
    CK(cudaEventRecord(s));
    f();
    CK(cudaEventRecord(e));
    CK(cudaEventSynchronize(e));
    float ms;
    CK(cudaEventElapsedTime(&ms, s, e));
    t.push_back(ms);
  }
  CK(cudaGetLastError());
  std::sort(t.begin(), t.end());
  return t[t.size() / 2] * 1e-3;
}

int main() {
  cudaDeviceProp p;
  CK(cudaGetDeviceProperties(&p, 0));
  printf("%s SMs %d L2 %d MB\n", p.name, p.multiProcessorCount, p.l2CacheSize >> 20);
  for (size_t bytes : {size_t(1) << 30, size_t(4) << 30}) {
    size_t n = bytes / 16;
    float4 *a, *b;
    CK(cudaMalloc(&a, bytes));
    CK(cudaMalloc(&b, bytes));
    CK(cudaMemset(a, 1, bytes));
    CK(cudaMemset(b, 0, bytes));
    int sms = p.multiProcessorCount;
    auto rep = [&](const char* name, double s) {
      printf("%-28s %5zu MiB  %.3f TB/s\n", name, bytes >> 20, 2.0 * bytes / s / 1e12);
    };
    rep("v0 memcpy",
        time_it([&] { CK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice)); }, 30));
    for (int bpsm : {4, 8, 16})
      for (int th : {256, 512, 1024}) {
        if (bpsm * th > 2048) continue;
        char nm[64];
        snprintf(nm, 64, "v1 gs %dx%d", bpsm, th);
        rep(nm, time_it([&] { v1<<<sms * bpsm, th>>>(a, b, n); }, 30));
      }
    for (int th : {128, 256, 512, 1024}) {
      char nm[64];
      snprintf(nm, 64, "v2 flat th%d", th);
      rep(nm, time_it([&] { v2<<<(n + th - 1) / th, th>>>(a, b, n); }, 30));
    }
#define V3(U, S, TH)                                             \
  do {                                                           \
    char nm[64];                                                 \
    snprintf(nm, 64, "v3 U%d s%d th%d", U, (int)S, TH);          \
    size_t g = (n + (size_t)TH * U - 1) / ((size_t)TH * U);      \
    rep(nm, time_it([&] { v3<U, S><<<g, TH>>>(a, b, n); }, 30)); \
  } while (0)
    V3(2, false, 256);
    V3(4, false, 256);
    V3(8, false, 256);
    V3(4, false, 512);
    V3(4, false, 1024);
    V3(2, false, 1024);
    V3(2, true, 256);
    V3(4, true, 256);
    V3(8, true, 256);
    V3(4, true, 512);
    V3(4, true, 1024);

#define V5(U, BPSM, TH)                                                \
  do {                                                                 \
    char nm[64];                                                       \
    snprintf(nm, 64, "v5 gsU%d %dx%d", U, BPSM, TH);                   \
    rep(nm, time_it([&] { v5<U><<<sms * BPSM, TH>>>(a, b, n); }, 30)); \
  } while (0)
    V5(2, 4, 512);
    V5(4, 4, 512);
    V5(4, 8, 256);
    V5(8, 2, 1024);
    V5(4, 2, 1024);
    V5(2, 2, 1024);

    CK(cudaFree(a));
    CK(cudaFree(b));
  }
  return 0;
}
