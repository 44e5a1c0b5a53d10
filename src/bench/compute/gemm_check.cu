// GEMM input generation and output checks. The rules are in gemm_check.h and
// docs/compute.md; this file holds the kernels and their launches.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "bench/compute/gemm_check.h"
#include "core/error.h"
#include "gpu/check.h"
#include "gpu/device.h"
#include "gpu/reduce.cuh"

namespace gpuvs {

namespace {

constexpr int kBlock = 256;
constexpr int kMaxLines = 8;                     // sampled rows, and sampled columns, of D
constexpr double kU64 = 1.1102230246251565e-16;  // 2^-53, FP64 unit roundoff

int grid_for(int64_t work_items, int per_sm = 8) {
  int device = 0, sms = 0;
  GPUVS_CUDA_CHECK(cudaGetDevice(&device));
  GPUVS_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const int64_t needed = (work_items + kBlock - 1) / kBlock;
  return static_cast<int>(std::clamp<int64_t>(needed, 1, int64_t{sms} * per_sm));
}

__host__ __device__ inline uint64_t mix64(uint64_t x) {  // splitmix64's finaliser
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

__device__ __forceinline__ double load(const void* p, ElemType t, int64_t i) {
  switch (t) {
    case ElemType::kF64:
      return static_cast<const double*>(p)[i];
    case ElemType::kF32:
      return static_cast<const float*>(p)[i];
    case ElemType::kF16:
      return __half2float(static_cast<const __half*>(p)[i]);
    case ElemType::kBF16:
      return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
    case ElemType::kE4M3:
      return static_cast<float>(static_cast<const __nv_fp8_e4m3*>(p)[i]);
    case ElemType::kE5M2:
      return static_cast<float>(static_cast<const __nv_fp8_e5m2*>(p)[i]);
    case ElemType::kI8:
      return static_cast<const int8_t*>(p)[i];
    case ElemType::kI32:
      return static_cast<const int32_t*>(p)[i];
  }
  return 0;
}

// Launch: kBlock threads, grid-stride over the elements.
__global__ void fill_random_kernel(void* data, ElemType type, size_t count, uint64_t seed) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < count;
       i += size_t{gridDim.x} * blockDim.x) {
    const uint64_t h = mix64(seed ^ mix64(i));
    const double u = static_cast<double>(h >> 11) * 0x1.0p-52 - 1.0;  // [-1, 1)
    const float f = static_cast<float>(u);
    switch (type) {
      case ElemType::kF64:
        static_cast<double*>(data)[i] = u;
        break;
      case ElemType::kF32:
        static_cast<float*>(data)[i] = f;
        break;
      case ElemType::kF16:
        static_cast<__half*>(data)[i] = __float2half_rn(f);
        break;
      case ElemType::kBF16:
        static_cast<__nv_bfloat16*>(data)[i] = __float2bfloat16_rn(f);
        break;
      case ElemType::kE4M3:
        static_cast<__nv_fp8_e4m3*>(data)[i] = __nv_fp8_e4m3(f);
        break;
      case ElemType::kE5M2:
        static_cast<__nv_fp8_e5m2*>(data)[i] = __nv_fp8_e5m2(f);
        break;
      case ElemType::kI8:
        static_cast<int8_t*>(data)[i] = static_cast<int8_t>(static_cast<int>(h % 255) - 127);
        break;
      case ElemType::kI32:
        static_cast<int32_t*>(data)[i] = static_cast<int32_t>(h % 255) - 127;
        break;
    }
  }
}

struct Counters {
  unsigned long long element_failures;
  unsigned long long checksum_failures;
  unsigned long long worst_bits;      // bits of the largest non-negative ratio
  unsigned long long first_bad_elem;  // i * N + j of the lowest failing element
};

// Records one comparison. NaN in err or bound fails and counts as an infinite ratio.
__device__ void record(Counters* c, double err, double bound, bool element,
                       unsigned long long where) {
  const bool ok = err <= bound;
  double ratio;
  if (ok) {
    ratio = bound > 0 ? err / bound : 0.0;
  } else {
    ratio = (bound > 0 && err == err) ? err / bound : INFINITY;
    if (element) {
      atomicAdd(&c->element_failures, 1ull);
      atomicMin(&c->first_bad_elem, where);
    } else {
      atomicAdd(&c->checksum_failures, 1ull);
    }
  }
  // Non-negative doubles order like their bit patterns.
  atomicMax(&c->worst_bits, static_cast<unsigned long long>(__double_as_longlong(ratio)));
}

struct Lines {
  int64_t rows[kMaxLines];
  int64_t cols[kMaxLines];
  int nrows;
  int ncols;
};

// A column's two sums, reduced together (one shuffle tree and one barrier for both).
struct SumPair {
  double s, a;
};

struct AddPair {
  __device__ SumPair operator()(SumPair x, SumPair y) const { return {x.s + y.s, x.a + y.a}; }
};

// Launch: kBlock threads; one warp per checked element (grid-stride over warps).
// Elements: every column of the sampled rows, then every row of the sampled columns.
__global__ void sampled_kernel(GemmView v, Lines lines, double tau, double u_out, Counters* c) {
  const int lane = threadIdx.x & 31;
  const int64_t row_elems = int64_t{lines.nrows} * v.n;
  const int64_t total = row_elems + int64_t{lines.ncols} * v.m;
  const int64_t warps = int64_t{gridDim.x} * blockDim.x / 32;
  for (int64_t w = (blockIdx.x * int64_t{blockDim.x} + threadIdx.x) / 32; w < total; w += warps) {
    int64_t i, j;
    if (w < row_elems) {
      i = lines.rows[w / v.n];
      j = w % v.n;
    } else {
      const int64_t w2 = w - row_elems;
      j = lines.cols[w2 / v.m];
      i = w2 % v.m;
    }
    double dot = 0, abs_sum = 0;
    for (int64_t kk = lane; kk < v.k; kk += 32) {
      const double a = load(v.a, v.a_type, i * v.k + kk);  // op(A)(i, kk)
      const double b = load(v.b, v.b_type, j * v.k + kk);  // B(kk, j)
      dot = fma(a, b, dot);
      abs_sum += fabs(a * b);
    }
    dot = warp_reduce<ShuffleTree::kDown>(dot, SumOp{});
    abs_sum = warp_reduce<ShuffleTree::kDown>(abs_sum, SumOp{});
    if (lane == 0) {
      const double d = load(v.d, v.d_type, i + j * v.m);
      const double ref = v.scale * dot;
      const double bound = tau * fabs(v.scale) * abs_sum + u_out * fabs(ref);
      record(c, fabs(d - ref), bound, true, static_cast<unsigned long long>(i * v.n + j));
    }
  }
}

// sum[r] += sum_c x(r, c), abs[r] += sum_c |x(r, c)| over this block's chunk of columns;
// x(r, c) = p[r + c * ld]. Launch: kBlock threads, grid (ceil(rows / kBlock), chunks);
// sum and abs zeroed before.
__global__ void row_sums_kernel(const void* p, ElemType t, int64_t rows, int64_t cols, int64_t ld,
                                int64_t chunk, double* sum, double* abs_sum) {
  const int64_t r = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (r >= rows) return;
  const int64_t c0 = blockIdx.y * chunk;
  const int64_t c1 = c0 + chunk < cols ? c0 + chunk : cols;
  double s = 0, a = 0;
  for (int64_t col = c0; col < c1; ++col) {
    const double x = load(p, t, r + col * ld);
    s += x;
    a += fabs(x);
  }
  atomicAdd(&sum[r], s);
  atomicAdd(&abs_sum[r], a);
}

// sum[c] = sum_r w[r] x(r, c), abs[c] = sum_r wabs[r] |x(r, c)| (a null weight is 1);
// x(r, c) = p[r + c * ld]. Launch: kBlock threads, one block per column (grid-stride).
__global__ void col_sums_kernel(const void* p, ElemType t, int64_t rows, int64_t cols, int64_t ld,
                                const double* w, const double* wabs, double* sum, double* abs_sum) {
  __shared__ BlockScratch<SumPair, kBlock> scratch;
  for (int64_t col = blockIdx.x; col < cols; col += gridDim.x) {
    double s = 0, a = 0;
    for (int64_t r = threadIdx.x; r < rows; r += blockDim.x) {
      const double x = load(p, t, r + col * ld);
      s += (w ? w[r] : 1.0) * x;
      a += (wabs ? wabs[r] : 1.0) * fabs(x);
    }
    const SumPair t = block_reduce<kBlock, ShuffleTree::kDown>(SumPair{s, a}, AddPair{}, scratch);
    if (threadIdx.x == 0) {
      sum[col] = t.s;
      abs_sum[col] = t.a;
    }
    __syncthreads();  // scratch is reused by the next column
  }
}

// |got - scale * ref| <= tau * |scale| * bnd + u_abs * got_abs, for each of `count`.
// Launch: kBlock threads, grid-stride.
__global__ void compare_sums_kernel(const double* got, const double* got_abs, const double* ref,
                                    const double* bnd, int64_t count, double scale, double tau,
                                    double u_abs, Counters* c) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count;
       i += int64_t{gridDim.x} * blockDim.x) {
    const double bound = tau * fabs(scale) * bnd[i] + u_abs * got_abs[i];
    record(c, fabs(got[i] - scale * ref[i]), bound, false, 0);
  }
}

// Up to kMaxLines distinct indices in [0, extent): the first, the last, then
// pseudo-random ones from `salt`.
int pick_lines(int64_t extent, uint64_t salt, int64_t* out) {
  int count = 0;
  auto add = [&](int64_t x) {
    for (int i = 0; i < count; ++i)
      if (out[i] == x) return;
    out[count++] = x;
  };
  add(0);
  if (extent > 1) add(extent - 1);
  for (uint64_t r = 0; count < kMaxLines && count < extent && r < 64; ++r)
    add(static_cast<int64_t>(mix64(salt * 131 + r) % static_cast<uint64_t>(extent)));
  return count;
}

void row_sums(const void* p, ElemType t, int64_t rows, int64_t cols, int64_t ld, double* sum,
              double* abs_sum, cudaStream_t stream) {
  const int64_t chunks = std::min<int64_t>(cols, 128);
  const int64_t chunk = (cols + chunks - 1) / chunks;
  const dim3 grid(static_cast<unsigned>((rows + kBlock - 1) / kBlock),
                  static_cast<unsigned>((cols + chunk - 1) / chunk));
  row_sums_kernel<<<grid, kBlock, 0, stream>>>(p, t, rows, cols, ld, chunk, sum, abs_sum);
  GPUVS_CUDA_CHECK_LAUNCH();
}

void col_sums(const void* p, ElemType t, int64_t rows, int64_t cols, int64_t ld, const double* w,
              const double* wabs, double* sum, double* abs_sum, cudaStream_t stream) {
  const unsigned grid = static_cast<unsigned>(std::min<int64_t>(cols, 65535));
  col_sums_kernel<<<grid, kBlock, 0, stream>>>(p, t, rows, cols, ld, w, wabs, sum, abs_sum);
  GPUVS_CUDA_CHECK_LAUNCH();
}

}  // namespace

size_t elem_bytes(ElemType t) {
  switch (t) {
    case ElemType::kF64:
      return 8;
    case ElemType::kF32:
    case ElemType::kI32:
      return 4;
    case ElemType::kF16:
    case ElemType::kBF16:
      return 2;
    case ElemType::kE4M3:
    case ElemType::kE5M2:
    case ElemType::kI8:
      return 1;
  }
  return 1;
}

const char* to_string(ElemType t) {
  switch (t) {
    case ElemType::kF64:
      return "f64";
    case ElemType::kF32:
      return "f32";
    case ElemType::kF16:
      return "f16";
    case ElemType::kBF16:
      return "bf16";
    case ElemType::kE4M3:
      return "e4m3";
    case ElemType::kE5M2:
      return "e5m2";
    case ElemType::kI8:
      return "i8";
    case ElemType::kI32:
      return "i32";
  }
  return "?";
}

void fill_random(void* data, ElemType type, size_t count, uint64_t seed, cudaStream_t stream) {
  fill_random_kernel<<<grid_for(static_cast<int64_t>(count)), kBlock, 0, stream>>>(data, type,
                                                                                   count, seed);
  GPUVS_CUDA_CHECK_LAUNCH();
}

void fill_poison(void* data, ElemType type, size_t count, cudaStream_t stream) {
  GPUVS_CUDA_CHECK(cudaMemsetAsync(data, 0xFF, count * elem_bytes(type), stream));
}

GemmCheck check_gemm(const GemmView& v, const GemmTolerance& tol, cudaStream_t stream) {
  if (v.m <= 0 || v.n <= 0 || v.k <= 0) throw Error("check_gemm: empty problem");
  GemmCheck out;
  Lines lines{};
  lines.nrows = pick_lines(v.m, static_cast<uint64_t>(v.m * 7 + v.k), lines.rows);
  lines.ncols = pick_lines(v.n, static_cast<uint64_t>(v.n * 11 + v.k), lines.cols);
  out.sampled_rows = lines.nrows;
  out.sampled_cols = lines.ncols;

  // Scratch, in doubles: D's row and column sums (with |.|), the reference's vectors.
  const int64_t m = v.m, n = v.n, k = v.k;
  const int64_t doubles = 4 * m + 4 * n + 4 * k;
  DeviceBuffer scratch(static_cast<size_t>(doubles) * sizeof(double) + sizeof(Counters));
  double* base = scratch.as<double>();
  double* d_row = base;             // (M) sum_j D(i, j)
  double* d_row_abs = d_row + m;    // (M) sum_j |D(i, j)|
  double* ref_row = d_row_abs + m;  // (M) sum_k op(A)(i, k) sB[k]
  double* bnd_row = ref_row + m;    // (M) sum_k |op(A)(i, k)| absB[k]
  double* d_col = bnd_row + m;      // (N) sum_i D(i, j)
  double* d_col_abs = d_col + n;    // (N)
  double* ref_col = d_col_abs + n;  // (N) sum_k sA[k] B(k, j)
  double* bnd_col = ref_col + n;    // (N) sum_k absA[k] |B(k, j)|
  double* s_a = bnd_col + n;        // (K) sum_i op(A)(i, k)
  double* abs_a = s_a + k;          // (K)
  double* s_b = abs_a + k;          // (K) sum_j B(k, j)
  double* abs_b = s_b + k;          // (K)
  auto* counters = reinterpret_cast<Counters*>(abs_b + k);

  GPUVS_CUDA_CHECK(cudaMemsetAsync(base, 0, static_cast<size_t>(doubles) * sizeof(double), stream));
  Counters init{0, 0, 0, ~0ull};
  GPUVS_CUDA_CHECK(cudaMemcpyAsync(counters, &init, sizeof(init), cudaMemcpyHostToDevice, stream));

  // The reference carries its own FP64 rounding: at most (terms) x 2^-53 of the sum
  // of magnitudes; added to tau so an exact comparison (INT8) stays exact in effect.
  const double tau_elem = tol.relative + static_cast<double>(k + 2) * kU64;
  const double tau_sums = tol.relative + static_cast<double>(k + std::max(m, n) + 2) * kU64;
  const double u_sums = 1.01 * tol.output_roundoff + static_cast<double>(std::max(m, n) + 2) * kU64;

  // 1. Sampled elements.
  const int64_t elements = int64_t{lines.nrows} * n + int64_t{lines.ncols} * m;
  sampled_kernel<<<grid_for(elements * 32, 16), kBlock, 0, stream>>>(v, lines, tau_elem,
                                                                     tol.output_roundoff, counters);
  GPUVS_CUDA_CHECK_LAUNCH();

  // 2. Checksums. A is (K, M) with ld K: its "rows" are k, its "columns" are i.
  row_sums(v.a, v.a_type, k, m, k, s_a, abs_a, stream);
  row_sums(v.b, v.b_type, k, n, k, s_b, abs_b, stream);
  row_sums(v.d, v.d_type, m, n, m, d_row, d_row_abs, stream);
  col_sums(v.d, v.d_type, m, n, m, nullptr, nullptr, d_col, d_col_abs, stream);
  col_sums(v.a, v.a_type, k, m, k, s_b, abs_b, ref_row, bnd_row, stream);
  col_sums(v.b, v.b_type, k, n, k, s_a, abs_a, ref_col, bnd_col, stream);
  compare_sums_kernel<<<grid_for(m), kBlock, 0, stream>>>(d_row, d_row_abs, ref_row, bnd_row, m,
                                                          v.scale, tau_sums, u_sums, counters);
  GPUVS_CUDA_CHECK_LAUNCH();
  compare_sums_kernel<<<grid_for(n), kBlock, 0, stream>>>(d_col, d_col_abs, ref_col, bnd_col, n,
                                                          v.scale, tau_sums, u_sums, counters);
  GPUVS_CUDA_CHECK_LAUNCH();

  Counters host{};
  GPUVS_CUDA_CHECK(cudaMemcpyAsync(&host, counters, sizeof(host), cudaMemcpyDeviceToHost, stream));
  GPUVS_CUDA_CHECK(cudaStreamSynchronize(stream));

  out.elements_checked = elements;
  out.checksums_checked = m + n;
  out.element_failures = static_cast<int64_t>(host.element_failures);
  out.checksum_failures = static_cast<int64_t>(host.checksum_failures);
  double worst = 0;
  static_assert(sizeof(worst) == sizeof(host.worst_bits));
  std::memcpy(&worst, &host.worst_bits, sizeof(worst));
  out.worst_ratio = worst;
  if (host.element_failures > 0) {
    out.first_bad_row = static_cast<int64_t>(host.first_bad_elem / static_cast<uint64_t>(n));
    out.first_bad_col = static_cast<int64_t>(host.first_bad_elem % static_cast<uint64_t>(n));
  }
  out.passed = out.element_failures == 0 && out.checksum_failures == 0;
  return out;
}

}  // namespace gpuvs
