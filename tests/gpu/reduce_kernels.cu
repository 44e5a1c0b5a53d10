// Kernels and launchers of reduce_kernels.h.
#include <string>
#include <type_traits>

#include "core/error.h"
#include "gpu/check.h"
#include "gpu/device.h"
#include "gpu/reduce.cuh"
#include "reduce_kernels.h"

namespace gpuvs::test {

namespace {

constexpr int kWarpTestBlock = 256;

struct PairSumOp {
  __device__ PairSum operator()(PairSum x, PairSum y) const { return {x.s + y.s, x.a + y.a}; }
};

// Launch: kThreads threads per block, one value each.
template <int kThreads, ShuffleTree kTree, class T, class Op>
__global__ void block_kernel(const T* in, T* first, T* all,
                             T* reversed) {  // in: (blocks * kThreads)
  __shared__ BlockScratch<T, kThreads> scratch;
  const T* mine = in + int64_t(blockIdx.x) * kThreads;
  const int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x;
  const T r = block_reduce<kThreads, kTree>(mine[threadIdx.x], Op{}, scratch);
  if (threadIdx.x == 0) first[blockIdx.x] = r;
  __syncthreads();  // block_reduce leaves the scratch to the caller
  all[i] = block_reduce_all<kThreads, kTree>(mine[threadIdx.x], Op{}, scratch);
  reversed[i] = block_reduce_all<kThreads, kTree>(mine[kThreads - 1 - threadIdx.x], Op{}, scratch);
}

// Launch: kWarpTestBlock threads per block, one value each.
template <int kLanes, ShuffleTree kTree, class T, class Op>
__global__ void warp_kernel(const T* in, T* out) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  out[i] = warp_reduce<kTree, kLanes>(in[i], Op{});
}

// Launch: (kCols, kRows) threads per block, one value each.
template <int kRows, class T, class Op>
__global__ void column_kernel(const T* in, T* out) {  // in: (blocks, kRows, 32), out: (blocks, 32)
  constexpr int kCols = 32;
  __shared__ ColumnScratch<T, kRows, kCols> scratch;
  const T v = in[(int64_t(blockIdx.x) * kRows + threadIdx.y) * kCols + threadIdx.x];
  const T r = column_reduce<kRows, kCols>(v, threadIdx.y, threadIdx.x, Op{}, scratch);
  if (threadIdx.y == 0) out[int64_t(blockIdx.x) * kCols + threadIdx.x] = r;
}

template <class T>
DeviceBuffer to_device(const std::vector<T>& v) {
  DeviceBuffer b(v.size() * sizeof(T));
  GPUVS_CUDA_CHECK(cudaMemcpy(b.get(), v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
  return b;
}

template <class T>
std::vector<T> to_host(const DeviceBuffer& b, size_t n) {
  std::vector<T> v(n);
  GPUVS_CUDA_CHECK(cudaMemcpy(v.data(), b.get(), n * sizeof(T), cudaMemcpyDeviceToHost));
  return v;
}

// Calls f(Op{}) with the device operation of `op`, where T has it.
template <class T, class F>
void with_op(TestOp op, F&& f) {
  if constexpr (std::is_same_v<T, PairSum>) {
    if (op != TestOp::kPairSum) throw Error("PairSum reduces with kPairSum only");
    f(PairSumOp{});
  } else {
    switch (op) {
      case TestOp::kSum:
        return f(SumOp{});
      case TestOp::kMax:
        return f(MaxOp{});
      case TestOp::kMin:
        return f(MinOp{});
      case TestOp::kPairSum:
        break;
    }
    throw Error("kPairSum reduces PairSum only");
  }
}

template <class F>
void with_tree(TestTree tree, F&& f) {
  if (tree == TestTree::kButterfly)
    f(std::integral_constant<ShuffleTree, ShuffleTree::kButterfly>{});
  else
    f(std::integral_constant<ShuffleTree, ShuffleTree::kDown>{});
}

// Calls f(std::integral_constant<int, n>{}) where n is one of kSizes; throws otherwise.
template <int... kSizes, class F>
void with_size(int n, const char* what, F&& f) {
  const bool found =
      ((n == kSizes ? (f(std::integral_constant<int, kSizes>{}), true) : false) || ...);
  if (!found) throw Error(std::string(what) + ": a size the test kernels are not built for");
}

template <int kThreads, class T>
void launch_block(const T* in, T* first, T* all, T* reversed, unsigned blocks, TestTree tree,
                  TestOp op) {
  with_tree(tree, [&](auto t) {
    with_op<T>(op, [&](auto o) {
      block_kernel<kThreads, decltype(t)::value, T, decltype(o)>
          <<<blocks, kThreads>>>(in, first, all, reversed);
    });
  });
}

template <int kLanes, class T>
void launch_warp(const T* in, T* out, unsigned blocks, TestTree tree, TestOp op) {
  with_tree(tree, [&](auto t) {
    with_op<T>(op, [&](auto o) {
      warp_kernel<kLanes, decltype(t)::value, T, decltype(o)><<<blocks, kWarpTestBlock>>>(in, out);
    });
  });
}

template <int kRows, class T>
void launch_column(const T* in, T* out, unsigned blocks, TestOp op) {
  with_op<T>(op, [&](auto o) {
    column_kernel<kRows, T, decltype(o)><<<blocks, dim3(32, kRows)>>>(in, out);
  });
}

}  // namespace

template <class T>
BlockOutputs<T> run_block_reduce(const std::vector<T>& in, int threads, TestTree tree, TestOp op) {
  if (threads <= 0 || in.empty() || in.size() % threads != 0)
    throw Error("run_block_reduce: the input is whole blocks");
  const unsigned blocks = static_cast<unsigned>(in.size() / threads);
  const DeviceBuffer d_in = to_device(in);
  DeviceBuffer first(blocks * sizeof(T)), all(in.size() * sizeof(T)),
      reversed(in.size() * sizeof(T));
  const T* i = d_in.as<T>();
  T* f = first.as<T>();
  T* a = all.as<T>();
  T* r = reversed.as<T>();
  with_size<32, 96, 256, 1024>(threads, "run_block_reduce", [&](auto k) {
    launch_block<decltype(k)::value>(i, f, a, r, blocks, tree, op);
  });
  GPUVS_CUDA_CHECK_LAUNCH();
  GPUVS_CUDA_CHECK(cudaDeviceSynchronize());
  return {to_host<T>(first, blocks), to_host<T>(all, in.size()), to_host<T>(reversed, in.size())};
}

template <class T>
std::vector<T> run_warp_reduce(const std::vector<T>& in, int lanes, TestTree tree, TestOp op) {
  if (in.empty() || in.size() % kWarpTestBlock != 0)
    throw Error("run_warp_reduce: the input is whole blocks of 256");
  const unsigned blocks = static_cast<unsigned>(in.size() / kWarpTestBlock);
  const DeviceBuffer d_in = to_device(in);
  DeviceBuffer out(in.size() * sizeof(T));
  with_size<2, 8, 32>(lanes, "run_warp_reduce", [&](auto k) {
    launch_warp<decltype(k)::value>(d_in.as<T>(), out.as<T>(), blocks, tree, op);
  });
  GPUVS_CUDA_CHECK_LAUNCH();
  GPUVS_CUDA_CHECK(cudaDeviceSynchronize());
  return to_host<T>(out, in.size());
}

template <class T>
std::vector<T> run_column_reduce(const std::vector<T>& in, int rows, TestOp op) {
  if (rows <= 0 || in.empty() || in.size() % (32 * static_cast<size_t>(rows)) != 0)
    throw Error("run_column_reduce: the input is whole tiles");
  const unsigned blocks = static_cast<unsigned>(in.size() / (32 * static_cast<size_t>(rows)));
  const DeviceBuffer d_in = to_device(in);
  DeviceBuffer out(blocks * 32 * sizeof(T));
  with_size<8, 16, 32>(rows, "run_column_reduce", [&](auto k) {
    launch_column<decltype(k)::value>(d_in.as<T>(), out.as<T>(), blocks, op);
  });
  GPUVS_CUDA_CHECK_LAUNCH();
  GPUVS_CUDA_CHECK(cudaDeviceSynchronize());
  return to_host<T>(out, blocks * size_t{32});
}

#define GPUVS_REDUCE_TEST_TYPE(T)                                                             \
  template BlockOutputs<T> run_block_reduce<T>(const std::vector<T>&, int, TestTree, TestOp); \
  template std::vector<T> run_warp_reduce<T>(const std::vector<T>&, int, TestTree, TestOp);   \
  template std::vector<T> run_column_reduce<T>(const std::vector<T>&, int, TestOp);
GPUVS_REDUCE_TEST_TYPE(float)
GPUVS_REDUCE_TEST_TYPE(double)
GPUVS_REDUCE_TEST_TYPE(int32_t)
GPUVS_REDUCE_TEST_TYPE(uint64_t)
GPUVS_REDUCE_TEST_TYPE(PairSum)
#undef GPUVS_REDUCE_TEST_TYPE

}  // namespace gpuvs::test
