// The decoder's rotary embedding of one pair (x1, x2) = (x[i], x[i + D/2]) of a head
// at position `pos` (nvcc only), transformers' rotate_half form with cos and sin in
// FP32. rope_and_cache() (kernels.cu) and the few-row QKV projection's epilogue
// (row_gemm.cu) both rotate through this, each product and difference rounded on its
// own (no fused multiply-add the compiler may or may not form), so the two write the
// same bits.
#pragma once

namespace gpuvs::models::llama {

__device__ __forceinline__ void rope_rotate(float x1, float x2, int pos, float inv_freq, float& r1,
                                            float& r2) {
  const float angle = __fmul_rn(float(pos), inv_freq);
  float sn, cs;
  sincosf(angle, &sn, &cs);
  r1 = __fsub_rn(__fmul_rn(x1, cs), __fmul_rn(x2, sn));
  r2 = __fadd_rn(__fmul_rn(x2, cs), __fmul_rn(x1, sn));
}

}  // namespace gpuvs::models::llama
