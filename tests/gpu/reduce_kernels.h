// Launchers of gpu/reduce.cuh's reductions for tests/gpu/test_reduce.cpp: each runs
// one reduction over host data on the current device and copies every thread's
// result back, so that the test compares them with a host model of the same tree.
#pragma once

#include <cstdint>
#include <vector>

namespace gpuvs::test {

enum class TestTree { kButterfly, kDown };
enum class TestOp { kSum, kMax, kMin, kPairSum };

// The two sums gemm_check reduces together: a struct shuffled word by word.
struct PairSum {
  double s, a;
};

// Outputs of one block-reduction run, `in.size() / threads` blocks of `threads`:
// first[b]: block_reduce's result in thread 0 of block b; all[i]: block_reduce_all's
// result in thread i; reversed[i]: a second block_reduce_all right after it on the
// block's values in reverse thread order (the scratch reused at once).
template <class T>
struct BlockOutputs {
  std::vector<T> first, all, reversed;
};

// threads: 32, 96, 256 or 1024. T: float, double, int32_t (kSum, kMax, kMin),
// uint64_t (kSum), PairSum (kPairSum).
template <class T>
BlockOutputs<T> run_block_reduce(const std::vector<T>& in, int threads, TestTree tree, TestOp op);

// warp_reduce over groups of `lanes` (2, 8 or 32) lanes: every thread's result, in
// blocks of 256 threads (in.size() a multiple of 256).
template <class T>
std::vector<T> run_warp_reduce(const std::vector<T>& in, int lanes, TestTree tree, TestOp op);

// column_reduce over a (rows, 32) tile per block (rows: 8, 16 or 32), blocks of
// (32, rows) threads, in.size() a multiple of 32 * rows (in[b][row][col]): the results
// of row 0's threads, (blocks, 32).
template <class T>
std::vector<T> run_column_reduce(const std::vector<T>& in, int rows, TestOp op);

}  // namespace gpuvs::test
