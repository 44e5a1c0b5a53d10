#include "models/layers/cudnn.h"

#include "gpu/check.h"

namespace gpuvs::models {

void cudnn_check(cudnnStatus_t status, const char* expr, const char* file, int line) {
  if (status == CUDNN_STATUS_SUCCESS) return;
  if (status == CUDNN_STATUS_ALLOC_FAILED)
    throw OutOfMemoryError(std::string("cuDNN could not allocate GPU memory in ") + expr);
  detail::throw_check_failure("cuDNN", expr, static_cast<int>(status), cudnnGetErrorString(status),
                              file, line);
}

cudnnDataType_t cudnn_dtype(DType t) {
  switch (t) {
    case DType::kF16:
      return CUDNN_DATA_HALF;
    case DType::kBF16:
      return CUDNN_DATA_BFLOAT16;
    case DType::kF32:
      break;
  }
  return CUDNN_DATA_FLOAT;
}

CudnnHandle::CudnnHandle() {
  GPUVS_CUDNN_CHECK_OOM(cudnnCreate(&handle_));
}
CudnnHandle::~CudnnHandle() {
  if (handle_) cudnnDestroy(handle_);
}

TensorDesc::TensorDesc(DType t, int n, int c, int h, int w) {
  GPUVS_CUDNN_CHECK_OOM(cudnnCreateTensorDescriptor(&desc_));
  try {
    GPUVS_CUDNN_CHECK_OOM(
        cudnnSetTensor4dDescriptor(desc_, CUDNN_TENSOR_NHWC, cudnn_dtype(t), n, c, h, w));
  } catch (...) {
    cudnnDestroyTensorDescriptor(desc_);
    throw;
  }
}
TensorDesc::~TensorDesc() {
  if (desc_) cudnnDestroyTensorDescriptor(desc_);
}

FilterDesc::FilterDesc(DType t, int k, int c, int r, int s) {
  GPUVS_CUDNN_CHECK_OOM(cudnnCreateFilterDescriptor(&desc_));
  try {
    GPUVS_CUDNN_CHECK_OOM(
        cudnnSetFilter4dDescriptor(desc_, cudnn_dtype(t), CUDNN_TENSOR_NHWC, k, c, r, s));
  } catch (...) {
    cudnnDestroyFilterDescriptor(desc_);
    throw;
  }
}
FilterDesc::~FilterDesc() {
  if (desc_) cudnnDestroyFilterDescriptor(desc_);
}

ConvDesc::ConvDesc(int pad, int stride, cudnnMathType_t math) {
  GPUVS_CUDNN_CHECK_OOM(cudnnCreateConvolutionDescriptor(&desc_));
  try {
    GPUVS_CUDNN_CHECK_OOM(cudnnSetConvolution2dDescriptor(
        desc_, pad, pad, stride, stride, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    set_math(math);
  } catch (...) {
    cudnnDestroyConvolutionDescriptor(desc_);
    throw;
  }
}
ConvDesc::~ConvDesc() {
  if (desc_) cudnnDestroyConvolutionDescriptor(desc_);
}
void ConvDesc::set_math(cudnnMathType_t math) {
  GPUVS_CUDNN_CHECK_OOM(cudnnSetConvolutionMathType(desc_, math));
}

}  // namespace gpuvs::models
