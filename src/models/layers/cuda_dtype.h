// The CUDA library type (for cuBLASLt) of a DType: one mapping for every model.
#pragma once

#include <library_types.h>

#include "models/layers/dtype.h"

namespace gpuvs::models {

inline cudaDataType_t cuda_data_type(DType t) {
  switch (t) {
    case DType::kF16:
      return CUDA_R_16F;
    case DType::kBF16:
      return CUDA_R_16BF;
    case DType::kF32:
      break;
  }
  return CUDA_R_32F;
}

}  // namespace gpuvs::models
