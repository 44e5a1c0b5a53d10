// RAII owners for the cuDNN objects the models use (handle, tensor, filter and
// convolution descriptors) and the check that maps cuDNN's allocation failure to
// gpuvs::OutOfMemoryError, so a batch search can catch it and retry smaller.
#pragma once

#include <cudnn.h>

#include "models/layers/dtype.h"

namespace gpuvs::models {

// Throws OutOfMemoryError for CUDNN_STATUS_ALLOC_FAILED, gpuvs::Error for any other
// failure (through GPUVS_CUDNN_CHECK's message format).
void cudnn_check(cudnnStatus_t status, const char* expr, const char* file, int line);
#define GPUVS_CUDNN_CHECK_OOM(expr) ::gpuvs::models::cudnn_check((expr), #expr, __FILE__, __LINE__)

cudnnDataType_t cudnn_dtype(DType t);

class CudnnHandle {
 public:
  CudnnHandle();
  ~CudnnHandle();
  CudnnHandle(const CudnnHandle&) = delete;
  CudnnHandle& operator=(const CudnnHandle&) = delete;
  cudnnHandle_t get() const { return handle_; }

 private:
  cudnnHandle_t handle_ = nullptr;
};

// A 4-d NHWC tensor descriptor.
class TensorDesc {
 public:
  TensorDesc(DType t, int n, int c, int h, int w);
  ~TensorDesc();
  TensorDesc(const TensorDesc&) = delete;
  TensorDesc& operator=(const TensorDesc&) = delete;
  cudnnTensorDescriptor_t get() const { return desc_; }

 private:
  cudnnTensorDescriptor_t desc_ = nullptr;
};

// A KRSC filter descriptor (CUDNN_TENSOR_NHWC): k outputs, c inputs, r x s window.
class FilterDesc {
 public:
  FilterDesc(DType t, int k, int c, int r, int s);
  ~FilterDesc();
  FilterDesc(const FilterDesc&) = delete;
  FilterDesc& operator=(const FilterDesc&) = delete;
  cudnnFilterDescriptor_t get() const { return desc_; }

 private:
  cudnnFilterDescriptor_t desc_ = nullptr;
};

// A 2-d cross-correlation with FP32 accumulation.
class ConvDesc {
 public:
  ConvDesc(int pad, int stride, cudnnMathType_t math);
  ~ConvDesc();
  ConvDesc(const ConvDesc&) = delete;
  ConvDesc& operator=(const ConvDesc&) = delete;
  cudnnConvolutionDescriptor_t get() const { return desc_; }
  void set_math(cudnnMathType_t math);

 private:
  cudnnConvolutionDescriptor_t desc_ = nullptr;
};

}  // namespace gpuvs::models
