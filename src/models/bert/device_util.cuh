// Device helpers shared by BERT's kernels (nvcc only): dropout (the mask itself is
// dropout_hash.h's), packed loads and stores, GELU. Their reductions are
// gpu/reduce.cuh's (warp_sum and warp_max: butterflies, every lane gets the result).
#pragma once

#include <cstdint>

#include "gpu/reduce.cuh"
#include "models/bert/dropout_hash.h"
#include "models/bert/kernels.h"
#include "models/layers/dtype.h"

namespace gpuvs::models::bert {

constexpr int kWarp = kWarpSize;

// One dropout site as a kernel applies it: the step's key, the 16-bit threshold and
// the scale of kept values. on is false when p is 0 (everything kept, unscaled).
struct DropMask {
  uint64_t key = 0;
  uint32_t threshold = 0;
  float scale = 1.0f;
  bool on = false;
};

// Reads the step counter: call once per thread, outside loops.
__device__ __forceinline__ DropMask drop_mask(const Dropout& d) {
  DropMask m;
  if (d.p <= 0.0f) return m;
  m.key = dropout_key(*d.rng, d.site);
  m.threshold = dropout_threshold(d.p);
  m.scale = 1.0f / (1.0f - d.p);
  m.on = true;
  return m;
}

// Inverted dropout of v (element i); identity when off. Kernels holding 4 or more
// consecutive elements use drop_bits and apply_kept instead (one hash per 4).
__device__ __forceinline__ float apply_drop(float v, const DropMask& m, uint64_t i) {
  if (!m.on) return v;
  return drop_keep(m.key, i, m.threshold) ? v * m.scale : 0.0f;
}

// Keep bits of elements i0 .. i0 + kN - 1 (i0 % 4 == 0 where kN % 4 == 0); all ones
// when off.
template <int kN>
__device__ __forceinline__ uint32_t drop_bits(const DropMask& m, uint64_t i0) {
  if (!m.on) return 0xFFFFFFFFu;
  return drop_keep_bits<kN>(m.key, i0, m.threshold);
}

// v where bit k of `bits` keeps it (scaled), else 0.
__device__ __forceinline__ float apply_kept(float v, const DropMask& m, uint32_t bits, int k) {
  if (!m.on) return v;
  return (bits >> k) & 1u ? v * m.scale : 0.0f;
}

// kN elements of E as one load or store of kN * sizeof(E) bytes (2 to 16), or several
// of 16 bytes where more: p aligned to min(kN * sizeof(E), 16) bytes.
template <int kBytes>
struct RawBytes;
template <>
struct RawBytes<2> {
  using type = uint16_t;
};
template <>
struct RawBytes<4> {
  using type = uint32_t;
};
template <>
struct RawBytes<8> {
  using type = uint2;
};
template <>
struct RawBytes<16> {
  using type = uint4;
};

template <class E, int kN>
struct Packed {
  static constexpr int kPiece = kN * int(sizeof(E)) > 16 ? 16 / int(sizeof(E)) : kN;
  using Raw = typename RawBytes<kPiece* int(sizeof(E))>::type;
  union {
    Raw raw[kN / kPiece];
    E e[kN];
  };
  __device__ __forceinline__ Packed() {}
};

template <int kN, class E>
__device__ __forceinline__ Packed<E, kN> load_packed(const E* p) {
  using P = Packed<E, kN>;
  P v;
#pragma unroll
  for (int q = 0; q < kN / P::kPiece; ++q)
    v.raw[q] = reinterpret_cast<const typename P::Raw*>(p)[q];
  return v;
}

template <int kN, class E>
__device__ __forceinline__ void store_packed(E* p, const Packed<E, kN>& v) {
  using P = Packed<E, kN>;
#pragma unroll
  for (int q = 0; q < kN / P::kPiece; ++q)
    reinterpret_cast<typename P::Raw*>(p)[q] = v.raw[q];
}

// Exact GELU (erf form) and its derivative d/dx [x Phi(x)] = Phi(x) + x phi(x): the
// GELU kernels and the FP8 casts fused with them compute the same values.
constexpr float kInvSqrt2 = 0.70710678118654752f;
constexpr float kInvSqrt2Pi = 0.39894228040143268f;

__device__ __forceinline__ float gelu(float x) {
  return 0.5f * x * (1.0f + erff(x * kInvSqrt2));
}

__device__ __forceinline__ float gelu_grad(float x) {
  return 0.5f * (1.0f + erff(x * kInvSqrt2)) + x * kInvSqrt2Pi * __expf(-0.5f * x * x);
}

inline int grid_for(int64_t n, int threads, int max_blocks = 132 * 16) {
  const int64_t b = (n + threads - 1) / threads;
  return static_cast<int>(b < 1 ? 1 : (b > max_blocks ? max_blocks : b));
}

}  // namespace gpuvs::models::bert
