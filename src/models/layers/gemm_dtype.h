// The GEMM element type (gpu/gemm_spec.h) of a DType and back: one mapping for every
// model. Plain C++.
#pragma once

#include "gpu/gemm_spec.h"
#include "models/layers/dtype.h"

namespace gpuvs::models {

inline GemmElem gemm_elem(DType t) {
  switch (t) {
    case DType::kF16:
      return GemmElem::kF16;
    case DType::kBF16:
      return GemmElem::kBF16;
    case DType::kF32:
      break;
  }
  return GemmElem::kF32;
}

// The storage type of a GEMM output of type `t` (bf16, fp16 or FP32 in the models).
inline DType dtype_of(GemmElem t) {
  switch (t) {
    case GemmElem::kF16:
      return DType::kF16;
    case GemmElem::kBF16:
      return DType::kBF16;
    default:
      return DType::kF32;
  }
}

}  // namespace gpuvs::models
