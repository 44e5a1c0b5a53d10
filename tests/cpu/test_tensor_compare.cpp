// The metric of every model check against PyTorch (models/tensor_compare.h).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "models/tensor_compare.h"

namespace {

using gpuvs::models::compare_tensors;
using gpuvs::models::HostTensor;
using gpuvs::models::tensor_difference;

TEST(TensorCompare, RelativeL2AndMaxErrorAreExact) {
  const HostTensor ref{{2, 2}, {3, 0, 0, 4}};  // ||ref|| = 5, max |ref| = 4
  const HostTensor got{{2, 2}, {3, 0, 1, 4}};  // one element off by 1
  const auto e = compare_tensors(got, ref);
  EXPECT_TRUE(e.same_shape);
  EXPECT_DOUBLE_EQ(e.rel_l2, 1.0 / 5.0);
  EXPECT_DOUBLE_EQ(e.max_err, 1.0 / 4.0);
  const auto same = compare_tensors(ref, ref);
  EXPECT_EQ(same.rel_l2, 0.0);
  EXPECT_EQ(same.max_err, 0.0);
}

TEST(TensorCompare, AllZeroReferenceGivesAbsoluteErrors) {
  const HostTensor ref{{3}, {0, 0, 0}};
  const HostTensor got{{3}, {0, 3, 4}};
  const auto e = compare_tensors(got, ref);
  EXPECT_DOUBLE_EQ(e.rel_l2, 5.0);
  EXPECT_DOUBLE_EQ(e.max_err, 4.0);
}

TEST(TensorCompare, NanAndSizeMismatchNeverPass) {
  const HostTensor ref{{2}, {1, 2}};
  const auto nan = compare_tensors({{2}, {1, std::numeric_limits<float>::quiet_NaN()}}, ref);
  EXPECT_TRUE(std::isinf(nan.rel_l2));
  EXPECT_TRUE(std::isinf(nan.max_err));
  const auto shorter = compare_tensors({{1}, {1}}, ref);
  EXPECT_FALSE(shorter.same_shape);
  EXPECT_TRUE(std::isinf(shorter.rel_l2));
  EXPECT_TRUE(std::isinf(shorter.max_err));
  // Same values, other shape: the errors are zero, the shape is reported.
  const auto reshaped = compare_tensors({{1, 2}, {1, 2}}, ref);
  EXPECT_FALSE(reshaped.same_shape);
  EXPECT_EQ(reshaped.rel_l2, 0.0);
}

TEST(TensorCompare, DifferenceKeepsTheFirstShape) {
  const HostTensor d = tensor_difference({{3}, {5, 7, 9}}, {{3}, {1, 2, 3}});
  EXPECT_EQ(d.shape, (std::vector<int64_t>{3}));
  EXPECT_EQ(d.data, (std::vector<float>{4, 5, 6}));
}

}  // namespace
