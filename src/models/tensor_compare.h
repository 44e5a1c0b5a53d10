// How a model's tensor is compared with PyTorch's (docs/model-checks.md, "Metric"):
// the relative L2 error of the whole tensor, and the largest absolute difference
// relative to the largest reference magnitude. One definition for every model test.
// Plain C++: tested on machines without a GPU.
#pragma once

#include "models/config.h"

namespace gpuvs::models {

struct TensorErrors {
  double rel_l2 = 0;   // ||got - ref|| / ||ref||  (||got - ref|| when ref is all zeros)
  double max_err = 0;  // max |got - ref| / max |ref|  (max |got - ref| when ref is all zeros)
  bool same_shape = true;
};

// A size mismatch, or a NaN anywhere in `got`, gives infinity for both errors, so a
// broken tensor can never pass a tolerance. `same_shape` compares the shapes.
TensorErrors compare_tensors(const HostTensor& got, const HostTensor& ref);

// a - b element by element (the first min(size) elements; a's shape): the change of
// a parameter across an optimizer step, compared as a tensor of its own.
HostTensor tensor_difference(HostTensor a, const HostTensor& b);

}  // namespace gpuvs::models
