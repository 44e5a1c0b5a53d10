// HBM streaming kernels. Launch shapes and the value scheme are in stream_kernels.h.
#include <array>

#include "bench/common/stream_kernels.h"
#include "gpu/check.h"
#include "gpu/device.h"
#include "gpu/reduce.cuh"

namespace gpuvs {

namespace {

enum class Hint { kNone, kStreaming, kNoAllocate256 };

template <Hint H>
__device__ __forceinline__ double2 load2(const double2* p) {
  if constexpr (H == Hint::kNone) {
    return *p;
  } else if constexpr (H == Hint::kStreaming) {
    return __ldcs(p);
  } else {
    double2 r;
    asm("ld.global.nc.L1::no_allocate.L2::256B.v2.f64 {%0, %1}, [%2];"
        : "=d"(r.x), "=d"(r.y)
        : "l"(p));
    return r;
  }
}

template <Hint H>
__device__ __forceinline__ void store2(double2* p, double2 v) {
  if constexpr (H == Hint::kNone) {
    *p = v;
  } else {
    __stcs(p, v);
  }
}

struct Args {
  const double2* a;  // (n2)
  const double2* b;  // (n2)
  double2* c;        // (n2)
  double* partials;  // (gridDim.x)
  size_t n2;         // 16-byte vectors per array
};

// Sum of `v` over the block, written by thread 0 to partials[blockIdx.x].
// Launch: blockDim.x == kStreamBlock.
__device__ void write_block_sum(double v, double* partials) {
  __shared__ BlockScratch<double, kStreamBlock> scratch;
  v = block_reduce<kStreamBlock, ShuffleTree::kDown>(v, SumOp{}, scratch);
  if (threadIdx.x == 0) partials[blockIdx.x] = v;
}

// Launch: kStreamBlock threads. A tile is U x kStreamBlock vectors; thread t handles
// vectors tile_start + t + u x kStreamBlock (coalesced per u). All loads of a tile are
// issued before its stores, so U loads per array are in flight per thread. Flat:
// grid = number of tiles. Persistent: any grid, grid-stride over tiles.
template <StreamOp Op, int U, Hint H, bool Persistent>
__global__ void __launch_bounds__(kStreamBlock) stream_kernel(Args args) {
  constexpr bool kReadsA = Op != StreamOp::kWrite;
  constexpr bool kReadsB = Op == StreamOp::kAdd || Op == StreamOp::kTriad || Op == StreamOp::kDot;
  constexpr size_t kTile = static_cast<size_t>(U) * kStreamBlock;
  const size_t step = Persistent ? static_cast<size_t>(gridDim.x) * kTile : 0;
  double acc = 0;
  for (size_t first = blockIdx.x * kTile + threadIdx.x; first < args.n2; first += step) {
    [[maybe_unused]] double2 va[U];
    [[maybe_unused]] double2 vb[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const size_t i = first + static_cast<size_t>(u) * kStreamBlock;
      if (i < args.n2) {
        if constexpr (kReadsA) va[u] = load2<H>(args.a + i);
        if constexpr (kReadsB) vb[u] = load2<H>(args.b + i);
      }
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const size_t i = first + static_cast<size_t>(u) * kStreamBlock;
      if (i >= args.n2) continue;
      if constexpr (Op == StreamOp::kRead) {
        acc += va[u].x + va[u].y;
      } else if constexpr (Op == StreamOp::kDot) {
        acc += va[u].x * vb[u].x + va[u].y * vb[u].y;
      } else {
        double2 r;
        if constexpr (Op == StreamOp::kWrite) {
          r = make_double2(kStreamWriteValue, kStreamWriteValue);
        } else if constexpr (Op == StreamOp::kCopy) {
          r = va[u];
        } else if constexpr (Op == StreamOp::kScale) {
          r = make_double2(kStreamScalar * va[u].x, kStreamScalar * va[u].y);
        } else if constexpr (Op == StreamOp::kAdd) {
          r = make_double2(va[u].x + vb[u].x, va[u].y + vb[u].y);
        } else {
          r = make_double2(va[u].x + kStreamScalar * vb[u].x, va[u].y + kStreamScalar * vb[u].y);
        }
        store2<H>(args.c + i, r);
      }
    }
    if constexpr (!Persistent) break;
  }
  if constexpr (Op == StreamOp::kRead || Op == StreamOp::kDot) write_block_sum(acc, args.partials);
}

using KernelFn = void (*)(Args);

// The variants of stream_variants(), in the same order.
constexpr std::array<StreamVariant, 9> kVariants = {{
    {"flat-1x16B", 1, false, "none"},
    {"flat-2x16B", 2, false, "none"},
    {"flat-4x16B", 4, false, "none"},
    {"flat-1x16B-cs", 1, false, "cs"},
    {"flat-2x16B-cs", 2, false, "cs"},
    {"flat-4x16B-cs", 4, false, "cs"},
    {"flat-2x16B-nc256", 2, false, "nc256"},
    {"flat-4x16B-nc256", 4, false, "nc256"},
    {"persistent-4x16B-cs", 4, true, "cs"},
}};

template <StreamOp Op>
KernelFn kernel_for(int variant) {
  switch (variant) {
    case 0:
      return stream_kernel<Op, 1, Hint::kNone, false>;
    case 1:
      return stream_kernel<Op, 2, Hint::kNone, false>;
    case 2:
      return stream_kernel<Op, 4, Hint::kNone, false>;
    case 3:
      return stream_kernel<Op, 1, Hint::kStreaming, false>;
    case 4:
      return stream_kernel<Op, 2, Hint::kStreaming, false>;
    case 5:
      return stream_kernel<Op, 4, Hint::kStreaming, false>;
    case 6:
      return stream_kernel<Op, 2, Hint::kNoAllocate256, false>;
    case 7:
      return stream_kernel<Op, 4, Hint::kNoAllocate256, false>;
    case 8:
      return stream_kernel<Op, 4, Hint::kStreaming, true>;
    default:
      throw Error("unknown streaming-kernel variant");
  }
}

KernelFn kernel_for(StreamOp op, int variant) {
  switch (op) {
    case StreamOp::kRead:
      return kernel_for<StreamOp::kRead>(variant);
    case StreamOp::kWrite:
      return kernel_for<StreamOp::kWrite>(variant);
    case StreamOp::kCopy:
      return kernel_for<StreamOp::kCopy>(variant);
    case StreamOp::kScale:
      return kernel_for<StreamOp::kScale>(variant);
    case StreamOp::kAdd:
      return kernel_for<StreamOp::kAdd>(variant);
    case StreamOp::kTriad:
      return kernel_for<StreamOp::kTriad>(variant);
    case StreamOp::kDot:
      return kernel_for<StreamOp::kDot>(variant);
  }
  throw Error("unknown streaming operation");
}

unsigned resident_grid(const void* kernel, int block) {
  int device = 0, sms = 0, per_sm = 0;
  GPUVS_CUDA_CHECK(cudaGetDevice(&device));
  GPUVS_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  GPUVS_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, block, 0));
  return static_cast<unsigned>(sms) * static_cast<unsigned>(per_sm > 0 ? per_sm : 1);
}

// Launch: 256 threads, grid-stride.
__global__ void init_inputs_kernel(double* a, double* b, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    a[i] = stream_a(i);
    if (b) b[i] = stream_b(i);
  }
}

__global__ void fill_doubles_kernel(double* x, size_t n, double value) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    x[i] = value;
}

// counters[0] += mismatches; counters[1] = min(index of a mismatch).
__global__ void check_output_kernel(StreamOp op, const double* c, size_t n,
                                    unsigned long long* counters) {
  unsigned long long local = 0;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    if (c[i] != stream_expected(op, i)) {
      ++local;
      atomicMin(&counters[1], static_cast<unsigned long long>(i));
    }
  }
  if (local) atomicAdd(&counters[0], local);
}

unsigned helper_grid() {
  int device = 0, sms = 0;
  GPUVS_CUDA_CHECK(cudaGetDevice(&device));
  GPUVS_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return static_cast<unsigned>(sms) * 8;
}

// Launch: kStreamBlock threads, one uint4 each; grid = copy_grid(n).
__global__ void copy_kernel(const uint4* __restrict__ a,  // (n)
                            uint4* __restrict__ b,        // (n)
                            size_t n) {
  const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) b[i] = a[i];
}

}  // namespace

std::string_view stream_op_name(StreamOp op) {
  switch (op) {
    case StreamOp::kRead:
      return "read";
    case StreamOp::kWrite:
      return "write";
    case StreamOp::kCopy:
      return "copy";
    case StreamOp::kScale:
      return "scale";
    case StreamOp::kAdd:
      return "add";
    case StreamOp::kTriad:
      return "triad";
    case StreamOp::kDot:
      return "dot";
  }
  return "unknown";
}

std::span<const StreamVariant> stream_variants() {
  return kVariants;
}

StreamShape stream_shape(StreamOp op, int variant, size_t n) {
  const StreamVariant& v = kVariants.at(static_cast<size_t>(variant));
  StreamShape shape;
  if (v.persistent) {
    shape.grid =
        resident_grid(reinterpret_cast<const void*>(kernel_for(op, variant)), kStreamBlock);
  } else {
    const size_t tile = static_cast<size_t>(v.vectors) * kStreamBlock;
    shape.grid = static_cast<unsigned>((n / 2 + tile - 1) / tile);
  }
  return shape;
}

void launch_stream(StreamOp op, int variant, const StreamShape& shape, const StreamArrays& arrays,
                   cudaStream_t stream) {
  Args args{static_cast<const double2*>(arrays.a), static_cast<const double2*>(arrays.b),
            static_cast<double2*>(arrays.c), arrays.partials, arrays.n / 2};
  void* params[] = {&args};
  GPUVS_CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(kernel_for(op, variant)),
                                    dim3(shape.grid), dim3(shape.block), params, 0, stream));
}

void init_stream_inputs(void* a, void* b, size_t n, cudaStream_t stream) {
  init_inputs_kernel<<<helper_grid(), 256, 0, stream>>>(static_cast<double*>(a),
                                                        static_cast<double*>(b), n);
  GPUVS_CUDA_CHECK_LAUNCH();
}

void fill_doubles(void* x, size_t n, double value, cudaStream_t stream) {
  fill_doubles_kernel<<<helper_grid(), 256, 0, stream>>>(static_cast<double*>(x), n, value);
  GPUVS_CUDA_CHECK_LAUNCH();
}

StreamCheck check_stream_output(StreamOp op, const void* c, size_t n, cudaStream_t stream) {
  StreamCheck result;
  result.elements = n;
  DeviceBuffer counters(2 * sizeof(unsigned long long));
  auto* k = counters.as<unsigned long long>();
  GPUVS_CUDA_CHECK(cudaMemsetAsync(k, 0, sizeof(unsigned long long), stream));
  GPUVS_CUDA_CHECK(cudaMemsetAsync(k + 1, 0xFF, sizeof(unsigned long long), stream));
  check_output_kernel<<<helper_grid(), 256, 0, stream>>>(op, static_cast<const double*>(c), n, k);
  GPUVS_CUDA_CHECK_LAUNCH();
  unsigned long long host[2] = {0, 0};
  GPUVS_CUDA_CHECK(cudaMemcpyAsync(host, k, sizeof(host), cudaMemcpyDeviceToHost, stream));
  GPUVS_CUDA_CHECK(cudaStreamSynchronize(stream));
  result.mismatches = host[0];
  result.first_bad = host[1];
  return result;
}

void launch_copy(const void* a, void* b, size_t n16, cudaStream_t stream) {
  copy_kernel<<<copy_grid(n16), kStreamBlock, 0, stream>>>(static_cast<const uint4*>(a),
                                                           static_cast<uint4*>(b), n16);
  GPUVS_CUDA_CHECK_LAUNCH();
}

}  // namespace gpuvs
