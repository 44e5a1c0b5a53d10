// Data for checking NCCL collectives exactly: every rank fills its send buffer with
// small integers that depend on (rank, index), so float32 sums over any number of
// ranks are exact, and the expected value of every received element is known.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace gpuvs {

// The value rank `rank` sends at element `index`: an integer in [-8, 8].
__host__ __device__ inline float collective_pattern(int rank, uint64_t index) {
  return static_cast<float>(static_cast<int>((index * 7 + static_cast<uint64_t>(rank) * 13) % 17) -
                            8);
}

// What one received element should hold, element j of the receive buffer:
enum class ExpectKind : int {
  kSumOverRanks,  // sum over r < ranks of pattern(r, offset + j)  (all_reduce, reduce,
                  // reduce_scatter with offset = rank * count)
  kFromRank,      // pattern(source, offset + j)                    (broadcast, sendrecv)
  kGathered,      // pattern(j / chunk, j % chunk)                   (all_gather)
  kAllToAll,      // pattern(j / chunk, rank * chunk + j % chunk)    (alltoall)
};

struct Expectation {
  ExpectKind kind = ExpectKind::kSumOverRanks;
  int ranks = 1;
  int rank = 0;         // the receiving rank (alltoall)
  int source = 0;       // kFromRank
  uint64_t offset = 0;  // kSumOverRanks, kFromRank
  uint64_t chunk = 1;   // kGathered, kAllToAll: elements per rank
};

// buf[i] = collective_pattern(rank, i) for i < count.  (count)
void fill_pattern(float* buf, size_t count, int rank, cudaStream_t stream);

// Sets `count` floats to NaN so stale data from an earlier size never passes a check.
void poison(float* buf, size_t count, cudaStream_t stream);

// Adds to *mismatches (device) the number of i < count with buf[i] != expected(i).
void count_mismatches(const float* buf, size_t count, const Expectation& expect,
                      unsigned long long* mismatches, cudaStream_t stream);

}  // namespace gpuvs
