#include "models/tensor_compare.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>

namespace gpuvs::models {

TensorErrors compare_tensors(const HostTensor& got, const HostTensor& ref) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  TensorErrors e;
  e.same_shape = got.shape == ref.shape;
  if (got.data.size() != ref.data.size()) {
    e.rel_l2 = e.max_err = kInf;
    return e;
  }
  double diff2 = 0, ref2 = 0, max_diff = 0, max_ref = 0;
  for (std::size_t i = 0; i < ref.data.size(); ++i) {
    const double d = double(got.data[i]) - double(ref.data[i]);
    diff2 += d * d;
    ref2 += double(ref.data[i]) * ref.data[i];
    // NaN must fail: std::max would drop it.
    max_diff = std::isnan(d) ? kInf : std::max(max_diff, std::fabs(d));
    max_ref = std::max(max_ref, std::fabs(double(ref.data[i])));
  }
  e.rel_l2 = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
  e.max_err = max_ref > 0 ? max_diff / max_ref : max_diff;
  if (std::isnan(e.rel_l2)) e.rel_l2 = kInf;
  return e;
}

HostTensor tensor_difference(HostTensor a, const HostTensor& b) {
  for (std::size_t i = 0; i < a.data.size() && i < b.data.size(); ++i)
    a.data[i] -= b.data[i];
  return a;
}

}  // namespace gpuvs::models
