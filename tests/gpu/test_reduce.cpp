// gpu/reduce.cuh against a host model of its trees: warp reductions over groups of 2,
// 8 and 32 lanes, block reductions of 32, 96, 256 and 1024 threads, column reductions
// of 8, 16 and 32 rows, for float, double,
// int32, uint64 and a struct, with sum, max and min. Floating-point inputs span six
// orders of magnitude with both signs, so that another summation order would give other
// bits; every result is compared bit for bit.
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gpu/check.h"
#include "gpu_test_util.h"
#include "reduce_kernels.h"

namespace gpuvs::test {
namespace {

constexpr int kWarp = 32;

template <class T>
T apply(TestOp op, T a, T b) {
  if constexpr (std::is_same_v<T, PairSum>) {
    return {a.s + b.s, a.a + b.a};
  } else {
    switch (op) {
      case TestOp::kSum:
        return static_cast<T>(a + b);
      case TestOp::kMax:
        if constexpr (std::is_floating_point_v<T>) return std::fmax(a, b);
        return a < b ? b : a;
      case TestOp::kMin:
        if constexpr (std::is_floating_point_v<T>) return std::fmin(a, b);
        return b < a ? b : a;
      case TestOp::kPairSum:
        break;
    }
    ADD_FAILURE() << "kPairSum on a scalar";
    return a;
  }
}

// One warp reduction as documented in gpu/reduce.cuh, for the 32 lanes of v.
template <class T>
std::vector<T> model_warp(std::vector<T> v, int lanes, TestTree tree, TestOp op) {
  for (int offset = lanes / 2; offset > 0; offset /= 2) {
    std::vector<T> next(v.size());
    for (int l = 0; l < kWarp; ++l) {
      int src = l;
      if (tree == TestTree::kButterfly) {
        src = l ^ offset;
      } else if (l % lanes + offset < lanes) {
        src = l + offset;  // past the group's end a down shuffle returns the lane's own value
      }
      next[l] = apply(op, v[l], v[src]);
    }
    v = std::move(next);
  }
  return v;
}

// A block reduction: each warp's lane 0 after its tree, folded in warp order.
template <class T>
T model_block(const std::vector<T>& v, TestTree tree, TestOp op) {
  T r{};
  for (size_t w = 0; w * kWarp < v.size(); ++w) {
    const std::vector<T> warp(v.begin() + w * kWarp, v.begin() + (w + 1) * kWarp);
    const T lane0 = model_warp(warp, kWarp, tree, op)[0];
    r = w == 0 ? lane0 : apply(op, r, lane0);
  }
  return r;
}

template <class T>
bool same_bits(const T& a, const T& b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

template <class T>
std::string show(const T& v) {
  if constexpr (std::is_same_v<T, PairSum>) {
    return "(" + std::to_string(v.s) + ", " + std::to_string(v.a) + ")";
  } else {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.17g", static_cast<double>(v));
    return buf;
  }
}

template <class T>
std::vector<T> inputs(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<T> v(n);
  std::uniform_real_distribution<double> exponent(-3.0, 3.0), unit(-1.0, 1.0);
  std::uniform_int_distribution<int32_t> small(-1000000, 1000000);
  for (auto& x : v) {
    if constexpr (std::is_same_v<T, PairSum>) {
      x = {unit(rng) * std::pow(10.0, exponent(rng)), std::pow(10.0, exponent(rng))};
    } else if constexpr (std::is_floating_point_v<T>) {
      x = static_cast<T>(unit(rng) * std::pow(10.0, exponent(rng)));
    } else if constexpr (std::is_signed_v<T>) {
      x = small(rng);
    } else {
      x = rng() >> 12;  // 52 bits: sums of 1024 of them do not wrap
    }
  }
  return v;
}

const char* name(TestTree t) {
  return t == TestTree::kButterfly ? "butterfly" : "down";
}

template <class T>
void check_block(int threads, TestTree tree, TestOp op) {
  const int blocks = 5;
  const std::vector<T> in = inputs<T>(static_cast<size_t>(threads) * blocks, threads * 7 + 1);
  const BlockOutputs<T> got = run_block_reduce(in, threads, tree, op);
  for (int b = 0; b < blocks; ++b) {
    const std::vector<T> mine(in.begin() + b * threads, in.begin() + (b + 1) * threads);
    const std::vector<T> rev(mine.rbegin(), mine.rend());
    const T want = model_block(mine, tree, op), want_rev = model_block(rev, tree, op);
    SCOPED_TRACE(std::to_string(threads) + " threads, " + name(tree) + ", block " +
                 std::to_string(b));
    EXPECT_TRUE(same_bits(got.first[b], want)) << show(got.first[b]) << " vs " << show(want);
    for (int t = 0; t < threads; ++t) {
      const size_t i = static_cast<size_t>(b) * threads + t;
      ASSERT_TRUE(same_bits(got.all[i], want)) << "thread " << t << ": " << show(got.all[i]);
      ASSERT_TRUE(same_bits(got.reversed[i], want_rev))
          << "thread " << t << ": " << show(got.reversed[i]) << " vs " << show(want_rev);
    }
  }
}

template <class T>
void check_warp(int lanes, TestTree tree, TestOp op) {
  const std::vector<T> in = inputs<T>(512, lanes * 13 + 5);
  const std::vector<T> got = run_warp_reduce(in, lanes, tree, op);
  for (size_t w = 0; w * kWarp < in.size(); ++w) {
    const std::vector<T> warp(in.begin() + w * kWarp, in.begin() + (w + 1) * kWarp);
    const std::vector<T> want = model_warp(warp, lanes, tree, op);
    for (int l = 0; l < kWarp; ++l) {
      // A down tree leaves only the group's first lane defined.
      if (tree == TestTree::kDown && l % lanes != 0) continue;
      ASSERT_TRUE(same_bits(got[w * kWarp + l], want[l]))
          << lanes << " lanes, " << name(tree) << ", warp " << w << " lane " << l << ": "
          << show(got[w * kWarp + l]) << " vs " << show(want[l]);
    }
  }
}

template <class T>
void check_column(int rows, TestOp op) {
  const int blocks = 3;
  const std::vector<T> in = inputs<T>(static_cast<size_t>(blocks) * rows * 32, rows * 11 + 2);
  const std::vector<T> got = run_column_reduce(in, rows, op);
  for (int b = 0; b < blocks; ++b) {
    for (int col = 0; col < 32; ++col) {
      T want = in[static_cast<size_t>(b) * rows * 32 + col];
      for (int r = 1; r < rows; ++r)
        want = apply(op, want, in[(static_cast<size_t>(b) * rows + r) * 32 + col]);
      const T& g = got[static_cast<size_t>(b) * 32 + col];
      ASSERT_TRUE(same_bits(g, want)) << rows << " rows, block " << b << " column " << col << ": "
                                      << show(g) << " vs " << show(want);
    }
  }
}

template <class T>
void check_all(std::initializer_list<TestOp> ops) {
  for (TestTree tree : {TestTree::kButterfly, TestTree::kDown}) {
    for (TestOp op : ops) {
      for (int threads : {32, 96, 256, 1024})
        check_block<T>(threads, tree, op);
      for (int lanes : {2, 8, 32})
        check_warp<T>(lanes, tree, op);
    }
  }
  for (TestOp op : ops)
    for (int rows : {8, 16, 32})
      check_column<T>(rows, op);
}

constexpr auto kScalarOps = {TestOp::kSum, TestOp::kMax, TestOp::kMin};

TEST(Reduce, WarpSizeIsTheDevicesWarpSize) {
  GPUVS_REQUIRE_GPU();
  int device = 0, warp = 0;
  GPUVS_CUDA_CHECK(cudaGetDevice(&device));
  GPUVS_CUDA_CHECK(cudaDeviceGetAttribute(&warp, cudaDevAttrWarpSize, device));
  EXPECT_EQ(warp, kWarp) << "gpu/reduce.cuh assumes warps of 32 lanes (kWarpSize)";
}

template <class T>
class ReduceScalar : public ::testing::Test {};
using ScalarTypes = ::testing::Types<float, double, int32_t, uint64_t>;
TYPED_TEST_SUITE(ReduceScalar, ScalarTypes);

TYPED_TEST(ReduceScalar, SumMaxMinMatchTheTrees) {
  GPUVS_REQUIRE_GPU();
  check_all<TypeParam>(kScalarOps);
}

TEST(Reduce, StructShuffledWordByWord) {
  GPUVS_REQUIRE_GPU();
  check_all<PairSum>({TestOp::kPairSum});
}

// The inputs have teeth: summed in another order (one after the other) they give other
// bits than the trees, so the bit-for-bit checks above pin the order.
TEST(Reduce, InputsTellSummationOrdersApart) {
  const std::vector<float> in = inputs<float>(256, 3);
  float serial = 0.0f;
  for (float x : in)
    serial += x;
  const float tree = model_block(in, TestTree::kButterfly, TestOp::kSum);
  EXPECT_FALSE(same_bits(serial, tree)) << show(serial);
}

}  // namespace
}  // namespace gpuvs::test
