// dev ladder: HBM streaming kernel variants (copy, triad, read) timed side by side,
// at 4, 8 and 16 GiB per array, to choose the variants the library tunes among
// (src/bench/common/stream_kernels.cu). Build and run:
//   nvcc -O3 -std=c++17 -arch="${ARCH:-native}" -o ladder ladder.cu   (dev/README.md)
//   ./ladder [GiB...]
// (array sizes in GiB; default 4 8 16)
// Bytes counted: arrays read + arrays written (copy 2, triad 3, read 1) x array
// bytes. Median of 20 timed launches after 3 warm-up launches. Results and the
// choice made are in docs/memory.md ("The dev ladder").
//  flat-U<k>-<hint>: tile of k x 256 vectors per block (16-byte double2), one tile
//    per block, all loads of a tile before its stores.
//  contig-2: each thread moves 2 adjacent vectors (32 contiguous bytes).
//  persist-U<k>-<hint>-w<waves>: SMs x resident blocks x waves, grid-stride.
//  hints: none; cs (ld/st.global.cs); nc256 (ld.global.nc.L1::no_allocate.L2::256B,
//    st.global.cs); l2p256 (ld.global.L2::256B, plain store).
//  read variants reduce per block into partials; "atomic" adds each block's sum to
//    one double with atomicAdd instead.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x)                                                             \
  do {                                                                    \
    cudaError_t err_ = (x);                                               \
    if (err_ != cudaSuccess) {                                            \
      printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(err_)); \
      exit(1);                                                            \
    }                                                                     \
  } while (0)

enum Op { kCopy, kTriad, kRead };
enum Hint { kNone, kCs, kNc256, kL2p256 };
constexpr int B = 256;

template <int H>
__device__ __forceinline__ double2 ld(const double2* p) {
  double2 r;
  if (H == kNone) {
    r = *p;
  } else if (H == kCs) {
    r = __ldcs(p);
  } else if (H == kNc256) {
    asm("ld.global.nc.L1::no_allocate.L2::256B.v2.f64 {%0, %1}, [%2];"
        : "=d"(r.x), "=d"(r.y)
        : "l"(p));
  } else {
    asm("ld.global.L2::256B.v2.f64 {%0, %1}, [%2];" : "=d"(r.x), "=d"(r.y) : "l"(p));
  }
  return r;
}
template <int H>
__device__ __forceinline__ void st(double2* p, double2 v) {
  if (H == kCs || H == kNc256)
    __stcs(p, v);
  else
    *p = v;
}

__device__ void block_sum(double v, double* out, bool atomic) {
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_down_sync(0xffffffffu, v, o);
  __shared__ double w[B / 32];
  if ((threadIdx.x & 31) == 0) w[threadIdx.x >> 5] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    double s = 0;
    for (int i = 0; i < B / 32; ++i)
      s += w[i];
    if (atomic)
      atomicAdd(out, s);
    else
      out[blockIdx.x] = s;
  }
}

template <int OP, int U, int H, bool P, bool ATOMIC>
__global__ void __launch_bounds__(B)
    tiled(const double2* a, const double2* b, double2* c, double* out, size_t n2) {
  const size_t tile = (size_t)U * B;
  const size_t step = P ? (size_t)gridDim.x * tile : 0;
  double acc = 0;
  for (size_t first = blockIdx.x * tile + threadIdx.x; first < n2; first += step) {
    double2 va[U], vb[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      size_t i = first + (size_t)u * B;
      if (i < n2) {
        va[u] = ld<H>(a + i);
        if (OP == kTriad) vb[u] = ld<H>(b + i);
      }
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      size_t i = first + (size_t)u * B;
      if (i >= n2) continue;
      if (OP == kRead)
        acc += va[u].x + va[u].y;
      else if (OP == kCopy)
        st<H>(c + i, va[u]);
      else
        st<H>(c + i, make_double2(va[u].x + 3.0 * vb[u].x, va[u].y + 3.0 * vb[u].y));
    }
    if (!P) break;
  }
  if (OP == kRead) block_sum(acc, out, ATOMIC);
}

// Each thread: 2 adjacent vectors.
template <int OP>
__global__ void __launch_bounds__(B)
    contig2(const double2* a, const double2* b, double2* c, double* out, size_t n2) {
  size_t i = 2 * (blockIdx.x * (size_t)B + threadIdx.x);
  double acc = 0;
  if (i + 1 < n2) {
    double2 a0 = a[i], a1 = a[i + 1];
    if (OP == kRead) {
      acc = a0.x + a0.y + a1.x + a1.y;
    } else if (OP == kCopy) {
      c[i] = a0;
      c[i + 1] = a1;
    } else {
      double2 b0 = b[i], b1 = b[i + 1];
      c[i] = make_double2(a0.x + 3.0 * b0.x, a0.y + 3.0 * b0.y);
      c[i + 1] = make_double2(a1.x + 3.0 * b1.x, a1.y + 3.0 * b1.y);
    }
  }
  if (OP == kRead) block_sum(acc, out, false);
}

__global__ void init(double* a, double* b, double* c, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    a[i] = 1 + (i & 1023);
    b[i] = 1 + ((i * 37) & 1023);
    c[i] = -1;
  }
}

template <class F>
double median_s(F f) {
  cudaEvent_t s, e;
  CK(cudaEventCreate(&s));
  CK(cudaEventCreate(&e));
  for (int i = 0; i < 3; ++i)
    f();
  std::vector<float> t;
  for (int r = 0; r < 20; ++r) {
    CK(cudaEventRecord(s));
    f();
    CK(cudaEventRecord(e));
    CK(cudaEventSynchronize(e));
    float ms;
    CK(cudaEventElapsedTime(&ms, s, e));
    t.push_back(ms);
  }
  CK(cudaGetLastError());
  CK(cudaEventDestroy(s));
  CK(cudaEventDestroy(e));
  std::sort(t.begin(), t.end());
  return t[t.size() / 2] * 1e-3;
}

struct Ctx {
  double2 *a, *b, *c;
  double* out;
  size_t n2;
  int sms;
};

template <int OP, int U, int H, bool P, bool ATOMIC = false>
double run_tiled(const Ctx& x, int waves = 1) {
  auto k = tiled<OP, U, H, P, ATOMIC>;
  unsigned grid;
  if (P) {
    int per = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, k, B, 0));
    grid = x.sms * per * waves;
  } else {
    grid = (unsigned)((x.n2 + (size_t)U * B - 1) / ((size_t)U * B));
  }
  return median_s([&] {
    if (ATOMIC) CK(cudaMemsetAsync(x.out, 0, 8));
    k<<<grid, B>>>(x.a, x.b, x.c, x.out, x.n2);
  });
}

int main(int argc, char** argv) {
  std::vector<size_t> sizes;
  for (int i = 1; i < argc; ++i)
    sizes.push_back(std::strtoul(argv[i], nullptr, 10));
  if (sizes.empty()) sizes = {4, 8, 16};
  cudaDeviceProp p;
  CK(cudaGetDeviceProperties(&p, 0));
  printf("%s SMs %d L2 %d MiB\n", p.name, p.multiProcessorCount, p.l2CacheSize >> 20);
  for (size_t gib : sizes) {
    const size_t bytes = gib << 30, n = bytes / 8;
    Ctx x;
    CK(cudaMalloc(&x.a, bytes));
    CK(cudaMalloc(&x.b, bytes));
    CK(cudaMalloc(&x.c, bytes));
    CK(cudaMalloc(&x.out, (n / 2 / B + 1) * 8));
    x.n2 = n / 2;
    x.sms = p.multiProcessorCount;
    init<<<x.sms * 8, 256>>>((double*)x.a, (double*)x.b, (double*)x.c, n);
    CK(cudaDeviceSynchronize());
    for (int op : {kCopy, kTriad, kRead}) {
      const char* on = op == kCopy ? "copy" : op == kTriad ? "triad" : "read";
      const double moved = (op == kCopy ? 2.0 : op == kTriad ? 3.0 : 1.0) * bytes;
      auto rep = [&](const char* name, double s) {
        printf("%-6s %2zu GiB  %-26s %.3f TB/s\n", on, gib, name, moved / s / 1e12);
      };
#define T(NAME, ...)                                                \
  do {                                                              \
    if (op == kCopy) rep(NAME, run_tiled<kCopy, __VA_ARGS__>(x));   \
    if (op == kTriad) rep(NAME, run_tiled<kTriad, __VA_ARGS__>(x)); \
    if (op == kRead) rep(NAME, run_tiled<kRead, __VA_ARGS__>(x));   \
  } while (0)
#define TW(NAME, W, ...)                                               \
  do {                                                                 \
    if (op == kCopy) rep(NAME, run_tiled<kCopy, __VA_ARGS__>(x, W));   \
    if (op == kTriad) rep(NAME, run_tiled<kTriad, __VA_ARGS__>(x, W)); \
    if (op == kRead) rep(NAME, run_tiled<kRead, __VA_ARGS__>(x, W));   \
  } while (0)
      if (op == kCopy)
        rep("memcpy", median_s([&] { CK(cudaMemcpyAsync(x.c, x.a, bytes, cudaMemcpyDefault)); }));
      T("flat-U1-none", 1, kNone, false);
      T("flat-U2-none", 2, kNone, false);
      T("flat-U4-none", 4, kNone, false);
      T("flat-U1-cs", 1, kCs, false);
      T("flat-U2-cs", 2, kCs, false);
      T("flat-U4-cs", 4, kCs, false);
      T("flat-U2-nc256", 2, kNc256, false);
      T("flat-U4-nc256", 4, kNc256, false);
      T("flat-U2-l2p256", 2, kL2p256, false);
      T("persist-U4-cs-w1", 4, kCs, true);
      T("persist-U8-cs-w1", 8, kCs, true);
      TW("persist-U4-cs-w2", 2, 4, kCs, true);
      T("persist-U4-nc256-w1", 4, kNc256, true);
      T("persist-U2-none-w1", 2, kNone, true);
      if (op == kRead) rep("persist-U4-cs-atomic", run_tiled<kRead, 4, kCs, true, true>(x));
      {
        const unsigned g = (unsigned)((x.n2 / 2 + B - 1) / B);
        double s = 0;
        if (op == kCopy)
          s = median_s([&] { contig2<kCopy><<<g, B>>>(x.a, x.b, x.c, x.out, x.n2); });
        if (op == kTriad)
          s = median_s([&] { contig2<kTriad><<<g, B>>>(x.a, x.b, x.c, x.out, x.n2); });
        if (op == kRead)
          s = median_s([&] { contig2<kRead><<<g, B>>>(x.a, x.b, x.c, x.out, x.n2); });
        rep("contig-2", s);
      }
    }
    CK(cudaFree(x.a));
    CK(cudaFree(x.b));
    CK(cudaFree(x.c));
    CK(cudaFree(x.out));
  }
  return 0;
}
