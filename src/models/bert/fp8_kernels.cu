// FP8 casts and scaling (fp8.h). Casts: 64 x 64 tiles, 256 threads, each thread two
// 8-element row pieces (16-byte loads of 16-bit data, 8-byte stores); the transposed
// copy goes through shared memory, 16 rows of a column per 16-byte store; one amax
// atomic per block.
#include <cuda_fp8.h>

#include <cmath>

#include "gpu/check.h"
#include "models/bert/device_util.cuh"
#include "models/bert/fp8.h"
#include "models/layers/swiglu.cuh"

namespace gpuvs::models::bert {

namespace {

constexpr int kTile = 64;                // rows and columns of a cast tile
constexpr int kPiece = 8;                // elements per thread piece
constexpr int kPieces = kTile / kPiece;  // pieces across a tile row
constexpr int kTPiece = 16;              // rows per piece of the transposed copy
constexpr int kTPieces = kTile / kTPiece;
constexpr int kCastThreads = 256;
constexpr int kThreads = 256;

__device__ __forceinline__ uint8_t to_fp8(float v, bool e5m2) {
  return static_cast<uint8_t>(
      __nv_cvt_float_to_fp8(v, __NV_SATFINITE, e5m2 ? __NV_E5M2 : __NV_E4M3));
}

// Non-negative floats order like their bit patterns as ints.
__device__ __forceinline__ void atomic_max_nonneg(float* addr, float v) {
  atomicMax(reinterpret_cast<int*>(addr), __float_as_int(v));
}

// *target = max(*target, the block's largest `amax`): one atomic per block. warp_amax
// is the block's shared BlockScratch<float, kBlock>.
template <int kBlock>
__device__ __forceinline__ void block_amax(float amax, float* warp_amax, float* target) {
  amax = block_reduce<kBlock, ShuffleTree::kButterfly>(amax, MaxOp{}, warp_amax);
  if (threadIdx.x == 0) atomic_max_nonneg(target, amax);
}

// 8 consecutive elements of src as floats (p 16-byte aligned for 16-bit types, 32 for
// float).
__device__ __forceinline__ void load8(const float* p, float* v) {
  const float4 a = *reinterpret_cast<const float4*>(p);
  const float4 b = *reinterpret_cast<const float4*>(p + 4);
  v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
}
template <class T>
__device__ __forceinline__ void load8(const T* p, float* v) {
  const Vec<T> x = load_vec(p);
#pragma unroll
  for (int j = 0; j < kPiece; ++j)
    v[j] = to_f(x.e[j]);
}

// Output tiles per block: the fused SwiGLU gradient writes the gate's and the up
// projection's gradient at the same columns of each half from one read of gate, up
// and the output's gradient (a block per tile read them twice and ran 2.4x slower than
// the unfused pair on an H200); every other cast one tile.
template <Fp8CastOp kOp>
constexpr int kTilesPerBlock = kOp == Fp8CastOp::kSwigluGrad ? 2 : 1;

// The 8 values at (row, col) of a fused SwiGLU cast (kOp kSwiglu or kSwigluGrad,
// fp8.h), rounded to T (out16[t], per output tile t) as the SwiGLU kernels compute
// them (layers/swiglu.cuh). kSwigluGrad: col in the gate half; out16[0] the gate's
// gradient there, out16[1] the up projection's at col + cols / 2.
template <class T, Fp8CastOp kOp>
__device__ __forceinline__ void swiglu_piece(const Fp8CastArgs& a, int64_t row, int64_t col,
                                             Vec<T>* out16) {
  float g[kPiece], u[kPiece];
  if constexpr (kOp == Fp8CastOp::kSwiglu) {
    const T* gu = static_cast<const T*>(a.src) + row * 2 * a.cols + col;
    load8(gu, g);
    load8(gu + a.cols, u);
#pragma unroll
    for (int j = 0; j < kPiece; ++j)
      out16[0].e[j] = from_f<T>(swiglu_value(g[j], u[j]));
  } else {
    const int64_t half = a.cols / 2;
    const T* gu = static_cast<const T*>(a.aux) + row * a.cols + col;
    float d[kPiece];
    load8(gu, g);
    load8(gu + half, u);
    load8(static_cast<const T*>(a.src) + row * half + col, d);
#pragma unroll
    for (int j = 0; j < kPiece; ++j) {
      const SwigluGrad q = swiglu_grad<T>(g[j], u[j], d[j]);
      out16[0].e[j] = from_f<T>(q.gate);
      out16[1].e[j] = from_f<T>(q.up);
    }
  }
}

template <class Src, Fp8CastOp kOp>
__global__ void __launch_bounds__(kCastThreads) cast_kernel(Fp8CastArgs a) {
  constexpr int kTiles = kTilesPerBlock<kOp>;
  // Rows padded to 80 bytes (as measured): 8-byte aligned for the row pieces.
  __shared__ __align__(16) uint8_t tile[kTiles][kTile][kTile + 16];
  __shared__ BlockScratch<float, kCastThreads> warp_amax;
  // kGeluGrad with colsum: the tile's values for its column sums (rows padded against
  // bank conflicts), and the sums of each quarter of the rows.
  constexpr bool kSums = kOp == Fp8CastOp::kGeluGrad;
  __shared__ float col_tile[kSums ? kTile : 1][kSums ? kTile + 1 : 1];
  __shared__ float col_quarter[kSums ? 4 : 1][kSums ? kTile : 1];
  const Src* src = static_cast<const Src*>(a.src);
  const float scale = a.meta->scale;
  const int64_t r0 = int64_t(blockIdx.y) * kTile, c0 = int64_t(blockIdx.x) * kTile;
  const int64_t tile_step = a.cols / kTiles;  // columns from one output tile to the next
  float amax = 0.0f;
#pragma unroll
  for (int k = 0; k < kTile * kPieces / kCastThreads; ++k) {
    const int idx = threadIdx.x + k * kCastThreads;
    const int r = idx / kPieces, pc = idx % kPieces;
    if (r0 + r >= a.rows) continue;
    const int64_t off = (r0 + r) * a.cols + c0 + pc * kPiece;
    float v[kTiles][kPiece];
    if constexpr (kOp == Fp8CastOp::kSwiglu || kOp == Fp8CastOp::kSwigluGrad) {
      Vec<Src> out16[kTiles];
      swiglu_piece<Src, kOp>(a, r0 + r, c0 + pc * kPiece, out16);
#pragma unroll
      for (int t = 0; t < kTiles; ++t) {
        if (a.value_out) store_vec(static_cast<Src*>(a.value_out) + off + t * tile_step, out16[t]);
#pragma unroll
        for (int j = 0; j < kPiece; ++j)
          v[t][j] = to_f(out16[t].e[j]);
      }
    } else {
      load8(src + off, v[0]);
    }
    if constexpr (kOp == Fp8CastOp::kGelu || kOp == Fp8CastOp::kGeluGrad) {
      float h[kPiece];
      if constexpr (kOp == Fp8CastOp::kGeluGrad) load8(static_cast<const Src*>(a.aux) + off, h);
      Vec<Src> out16;
#pragma unroll
      for (int j = 0; j < kPiece; ++j) {
        out16.e[j] =
            from_f<Src>(kOp == Fp8CastOp::kGelu ? gelu(v[0][j]) : v[0][j] * gelu_grad(h[j]));
        v[0][j] = to_f(out16.e[j]);
      }
      if (a.value_out) store_vec(static_cast<Src*>(a.value_out) + off, out16);
      if constexpr (kOp == Fp8CastOp::kGeluGrad) {
        if (a.colsum)
#pragma unroll
          for (int j = 0; j < kPiece; ++j)
            col_tile[r][pc * kPiece + j] = v[0][j];
      }
    }
#pragma unroll
    for (int t = 0; t < kTiles; ++t) {
      union {
        uint2 raw;
        uint8_t b[kPiece];
      } q;
#pragma unroll
      for (int j = 0; j < kPiece; ++j) {
        amax = fmaxf(amax, fabsf(v[t][j]));
        q.b[j] = to_fp8(v[t][j] * scale, a.e5m2);
      }
      if (a.out) *reinterpret_cast<uint2*>(a.out + off + t * tile_step) = q.raw;
      *reinterpret_cast<uint2*>(&tile[t][r][pc * kPiece]) = q.raw;
    }
  }
  if (a.out_t) {
    __syncthreads();
    // Each thread one 16-row piece of a column: 16-byte stores. A standalone bench of
    // this tile on an H200 (8192 x 1024, bf16 to E4M3) measured 2290 GB/s with 8-byte
    // and 3302 with 16-byte stores; in the model's profile the casts took the same time
    // either way (0.345 ms per step for the QKV input, regions timed eagerly). rows %
    // 32 == 0, so a piece is wholly inside or wholly past the last row.
#pragma unroll
    for (int t = 0; t < kTiles; ++t) {
#pragma unroll
      for (int k = 0; k < kTile * kTPieces / kCastThreads; ++k) {
        const int idx = threadIdx.x + k * kCastThreads;
        const int ct = idx / kTPieces, pr = idx % kTPieces;  // column of src, 16-row group
        if (r0 + pr * kTPiece >= a.rows) continue;
        union {
          uint4 raw;
          uint8_t b[kTPiece];
        } q;
#pragma unroll
        for (int j = 0; j < kTPiece; ++j)
          q.b[j] = tile[t][pr * kTPiece + j][ct];
        *reinterpret_cast<uint4*>(a.out_t + (c0 + t * tile_step + ct) * a.rows + r0 +
                                  pr * kTPiece) = q.raw;
      }
    }
  }
  if constexpr (kSums) {
    // Column sums of the tile in a fixed order (a quarter of the rows per thread, then
    // the quarters in order): the same bits on every run.
    if (a.colsum) {
      __syncthreads();
      const int col = threadIdx.x % kTile, quarter = threadIdx.x / kTile;
      float sum = 0.0f;
      for (int r = quarter * (kTile / 4); r < (quarter + 1) * (kTile / 4) && r0 + r < a.rows; ++r)
        sum += col_tile[r][col];
      col_quarter[quarter][col] = sum;
      __syncthreads();
      if (threadIdx.x < kTile)
        a.colsum[int64_t(blockIdx.y) * a.cols + c0 + threadIdx.x] =
            col_quarter[0][threadIdx.x] + col_quarter[1][threadIdx.x] +
            col_quarter[2][threadIdx.x] + col_quarter[3][threadIdx.x];
    }
  }
  block_amax<kCastThreads>(amax, warp_amax, &a.meta->amax);
}

constexpr int kAmaxBlocksPerJob = 64;

__global__ void reset_amax_kernel(const Fp8ScaleJob* jobs, int count) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) jobs[i].meta->amax = 0.0f;
}

// grid (kAmaxBlocksPerJob, jobs): the blocks of a job stride over its float4s; one
// atomic per block.
__global__ void __launch_bounds__(kThreads) amax_kernel(const Fp8ScaleJob* jobs) {
  __shared__ BlockScratch<float, kThreads> warp_amax;
  const Fp8ScaleJob job = jobs[blockIdx.y];
  const float4* x = reinterpret_cast<const float4*>(job.src);
  float amax = 0.0f;
  for (int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x; i < job.n / 4;
       i += int64_t(gridDim.x) * kThreads) {
    const float4 v = x[i];
    amax = fmaxf(amax, fmaxf(fmaxf(fabsf(v.x), fabsf(v.y)), fmaxf(fabsf(v.z), fabsf(v.w))));
  }
  block_amax<kThreads>(amax, warp_amax, &job.meta->amax);
}

__device__ __forceinline__ void set_scale(Fp8Meta* m, float amax) {
  if (amax > 0.0f && isfinite(amax)) {
    m->scale = m->fmt_max / amax;
    m->scale_inv = 1.0f / m->scale;
  }
}

__global__ void current_scale_kernel(const Fp8ScaleJob* jobs, int count) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= count) return;
  Fp8Meta* m = jobs[i].meta;
  set_scale(m, m->amax);
  m->amax = 0.0f;
}

__global__ void update_kernel(Fp8Meta* metas, int count) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= count) return;
  Fp8Meta* m = metas + i;
  if (!m->delayed) return;
  float mx = m->amax;
  for (int h = kFp8History - 1; h > 0; --h) {
    m->history[h] = m->history[h - 1];
    mx = fmaxf(mx, m->history[h]);
  }
  m->history[0] = m->amax;
  m->amax = 0.0f;
  set_scale(m, mx);
}

__global__ void add_kernel(const __nv_bfloat16* __restrict__ src, float* __restrict__ dst,
                           int64_t n, float beta) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    dst[i] = (beta != 0.0f ? beta * dst[i] : 0.0f) + __bfloat162float(src[i]);
}

// The cast kernel of `a.op` for a source of type T (fused GELUs: 16-bit types only).
template <class T>
void launch_cast(const Fp8CastArgs& a, dim3 grid, cudaStream_t s) {
  if constexpr (sizeof(T) != 2) {
    cast_kernel<T, Fp8CastOp::kCopy><<<grid, kCastThreads, 0, s>>>(a);
  } else if (a.op == Fp8CastOp::kGelu) {
    cast_kernel<T, Fp8CastOp::kGelu><<<grid, kCastThreads, 0, s>>>(a);
  } else if (a.op == Fp8CastOp::kGeluGrad) {
    cast_kernel<T, Fp8CastOp::kGeluGrad><<<grid, kCastThreads, 0, s>>>(a);
  } else if (a.op == Fp8CastOp::kSwiglu) {
    cast_kernel<T, Fp8CastOp::kSwiglu><<<grid, kCastThreads, 0, s>>>(a);
  } else if (a.op == Fp8CastOp::kSwigluGrad) {
    cast_kernel<T, Fp8CastOp::kSwigluGrad><<<grid, kCastThreads, 0, s>>>(a);
  } else {
    cast_kernel<T, Fp8CastOp::kCopy><<<grid, kCastThreads, 0, s>>>(a);
  }
}

}  // namespace

Fp8Meta fp8_meta_init(bool e5m2, bool delayed) {
  Fp8Meta m{};
  m.scale = 1.0f;
  m.scale_inv = 1.0f;
  m.fmt_max = e5m2 ? kE5m2Max : kE4m3Max;
  m.delayed = delayed ? 1 : 0;
  return m;
}

void fp8_cast(const Fp8CastArgs& a, cudaStream_t s) {
  if (a.rows % 32 != 0 || a.cols % kTile != 0)
    throw Error("fp8_cast: rows must be a multiple of 32 and columns of 64");
  const auto aligned = [](const void* p, uintptr_t n) {
    return reinterpret_cast<uintptr_t>(p) % n == 0;
  };
  if (!aligned(a.src, 32) || !aligned(a.out, 8) || !aligned(a.out_t, 16))
    throw Error("fp8_cast: source 32-byte, output 8-byte and transposed output 16-byte aligned");
  if (a.colsum && a.op != Fp8CastOp::kGeluGrad)
    throw Error("fp8_cast: column sums come with the fused GELU gradient only");
  static_assert(kCastThreads == 4 * kTile, "fp8_cast: a quarter of a tile's rows per thread");
  const bool needs_aux = a.op == Fp8CastOp::kGeluGrad || a.op == Fp8CastOp::kSwigluGrad;
  if (a.op != Fp8CastOp::kCopy && (a.src_f32 || a.dtype == DType::kF32 || (needs_aux && !a.aux) ||
                                   !aligned(a.aux, 32) || !aligned(a.value_out, 32)))
    throw Error(
        "fp8_cast: a fused activation needs a 16-bit source (and its input, 32-byte aligned)");
  if (a.op == Fp8CastOp::kSwigluGrad && (a.cols % (2 * kTile) != 0 || a.value_out == a.aux))
    throw Error(
        "fp8_cast: the fused SwiGLU gradient needs halves of whole tiles and value_out apart "
        "from aux");
  // kSwigluGrad: a block per column tile of the gate half (kTilesPerBlock).
  const int64_t tile_cols = a.op == Fp8CastOp::kSwigluGrad ? a.cols / 2 : a.cols;
  const dim3 grid(static_cast<unsigned>(tile_cols / kTile),
                  static_cast<unsigned>((a.rows + kTile - 1) / kTile));
  if (a.src_f32) {
    cast_kernel<float, Fp8CastOp::kCopy><<<grid, kCastThreads, 0, s>>>(a);
  } else {
    GPUVS_DISPATCH_DTYPE(a.dtype, { launch_cast<T>(a, grid, s); });
  }
  GPUVS_CUDA_CHECK_LAUNCH();
}

int64_t fp8_colsum_partial_floats(int64_t rows, int64_t cols) {
  return (rows + kTile - 1) / kTile * cols;
}

Fp8ScaleBatch::Fp8ScaleBatch(const std::vector<Fp8ScaleJob>& jobs)
    : count_(static_cast<int>(jobs.size())) {
  for (const Fp8ScaleJob& j : jobs)
    if (!j.src || !j.meta || j.n % 4 != 0 || reinterpret_cast<uintptr_t>(j.src) % 16 != 0)
      throw Error("Fp8ScaleBatch: every job needs a 16-byte aligned source of 4k floats");
  if (jobs.empty()) return;
  jobs_ = DeviceBuffer(jobs.size() * sizeof(Fp8ScaleJob));
  GPUVS_CUDA_CHECK(cudaMemcpy(jobs_.get(), jobs.data(), jobs_.bytes(), cudaMemcpyHostToDevice));
}

void Fp8ScaleBatch::run(cudaStream_t s) const {
  if (count_ == 0) return;
  const auto* jobs = jobs_.as<Fp8ScaleJob>();
  const unsigned small = static_cast<unsigned>((count_ + kThreads - 1) / kThreads);
  reset_amax_kernel<<<small, kThreads, 0, s>>>(jobs, count_);
  GPUVS_CUDA_CHECK_LAUNCH();
  amax_kernel<<<dim3(kAmaxBlocksPerJob, static_cast<unsigned>(count_)), kThreads, 0, s>>>(jobs);
  GPUVS_CUDA_CHECK_LAUNCH();
  current_scale_kernel<<<small, kThreads, 0, s>>>(jobs, count_);
  GPUVS_CUDA_CHECK_LAUNCH();
}

void update_fp8_metas(Fp8Meta* metas, int count, cudaStream_t s) {
  update_kernel<<<(count + kThreads - 1) / kThreads, kThreads, 0, s>>>(metas, count);
  GPUVS_CUDA_CHECK_LAUNCH();
}

void add_bf16_into_f32(const void* src, float* dst, int64_t n, float beta, cudaStream_t s) {
  add_kernel<<<grid_for(n, kThreads), kThreads, 0, s>>>(static_cast<const __nv_bfloat16*>(src), dst,
                                                        n, beta);
  GPUVS_CUDA_CHECK_LAUNCH();
}

}  // namespace gpuvs::models::bert
