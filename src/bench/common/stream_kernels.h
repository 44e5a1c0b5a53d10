// The HBM streaming kernels (BabelStream's set plus read and write) and their
// launch variants. Kernels live in stream_kernels.cu with no formatting or host
// logic (nvcc's host pass cannot compile fmt's compile-time format checks); the
// benchmark that times them is memory/hbm.cpp.
//
// Arrays hold doubles, moved as 16-byte double2 vectors. Element i of the inputs is
// a(i) = 1 + (i mod 1024) and b(i) = 1 + (37 i mod 1024): small integers, so every
// output, and every sum over 2^30 elements (< 2^53), is exact in double whatever
// the order of the additions. That makes the checks exact: outputs against their
// formula per element, reductions against a closed form.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "bench/host_device.h"

namespace gpuvs {

enum class StreamOp { kRead, kWrite, kCopy, kScale, kAdd, kTriad, kDot };
inline constexpr StreamOp kStreamOps[] = {StreamOp::kRead,  StreamOp::kWrite, StreamOp::kCopy,
                                          StreamOp::kScale, StreamOp::kAdd,   StreamOp::kTriad,
                                          StreamOp::kDot};

// Arrays read and written per element: bytes counted = (reads + writes) x array bytes.
//   read: sum(a)   write: c = w   copy: c = a   scale: c = s a   add: c = a + b
//   triad: c = a + s b   dot: sum(a b)
constexpr int stream_reads(StreamOp op) {
  return op == StreamOp::kWrite                                                     ? 0
         : (op == StreamOp::kAdd || op == StreamOp::kTriad || op == StreamOp::kDot) ? 2
                                                                                    : 1;
}
constexpr int stream_writes(StreamOp op) {
  return (op == StreamOp::kRead || op == StreamOp::kDot) ? 0 : 1;
}
constexpr bool stream_reduces(StreamOp op) {
  return op == StreamOp::kRead || op == StreamOp::kDot;
}
std::string_view stream_op_name(StreamOp op);  // "read", "write", "copy", ...

inline constexpr uint64_t kStreamPeriod = 1024;  // a and b repeat with this period
inline constexpr double kStreamScalar = 3.0;
inline constexpr double kStreamWriteValue = 7.0;
inline constexpr double kStreamPoison = -1.0;  // no operation ever produces it

GPUVS_HD inline double stream_a(uint64_t i) {
  return static_cast<double>(1 + (i & (kStreamPeriod - 1)));
}
GPUVS_HD inline double stream_b(uint64_t i) {
  return static_cast<double>(1 + ((i * 37) & (kStreamPeriod - 1)));
}
// c[i] after an operation that writes c.
GPUVS_HD inline double stream_expected(StreamOp op, uint64_t i) {
  switch (op) {
    case StreamOp::kWrite:
      return kStreamWriteValue;
    case StreamOp::kCopy:
      return stream_a(i);
    case StreamOp::kScale:
      return kStreamScalar * stream_a(i);
    case StreamOp::kAdd:
      return stream_a(i) + stream_b(i);
    case StreamOp::kTriad:
      return stream_a(i) + kStreamScalar * stream_b(i);
    default:
      return kStreamPoison;
  }
}
// The closed form of a reduction over n elements (n a multiple of kStreamPeriod).
inline double stream_expected_sum(StreamOp op, size_t n) {
  double period = 0;
  for (uint64_t k = 0; k < kStreamPeriod; ++k)
    period += op == StreamOp::kDot ? stream_a(k) * stream_b(k) : stream_a(k);
  return period * static_cast<double>(n / kStreamPeriod);
}

// Threads per block of every streaming kernel (and of the copy kernel below).
inline constexpr int kStreamBlock = 256;

// A launch variant. "flat": one tile of `vectors` x kStreamBlock vectors per block,
// as many blocks as tiles (many waves). "persistent": SMs x resident blocks (from the
// occupancy calculator), grid-stride over tiles. Hints: "none"; "cs" = ld.global.cs /
// st.global.cs (evict-first); "nc256" = ld.global.nc.L1::no_allocate.L2::256B (read-
// only path, no L1 allocation, 256-byte L2 prefetch) with st.global.cs.
struct StreamVariant {
  std::string_view name;  // "flat-2x16B-cs"
  int vectors;            // 16-byte vectors per thread per array and tile
  bool persistent;
  std::string_view hints;  // "none" | "cs" | "nc256"
};
std::span<const StreamVariant> stream_variants();

struct StreamArrays {
  const void* a = nullptr;     // (n) doubles
  const void* b = nullptr;     // (n) doubles
  void* c = nullptr;           // (n) doubles, the output of ops that write
  double* partials = nullptr;  // (grid) one sum per block, for read and dot
  size_t n = 0;                // elements; a multiple of 2 x kStreamBlock x 4
};

struct StreamShape {
  unsigned grid = 0;
  int block = kStreamBlock;
};

// The grid a variant launches for n elements on the current device.
StreamShape stream_shape(StreamOp op, int variant, size_t n);
void launch_stream(StreamOp op, int variant, const StreamShape& shape, const StreamArrays& arrays,
                   cudaStream_t stream);

// a[i] = stream_a(i), b[i] = stream_b(i) (b may be null); asynchronous.
void init_stream_inputs(void* a, void* b, size_t n, cudaStream_t stream);
// x[i] = value for n doubles; asynchronous.
void fill_doubles(void* x, size_t n, double value, cudaStream_t stream);

struct StreamCheck {
  uint64_t elements = 0;
  uint64_t mismatches = 0;
  uint64_t first_bad = 0;  // meaningless when mismatches == 0
};
// Counts the c[i] != stream_expected(op, i). Synchronises `stream`.
StreamCheck check_stream_output(StreamOp op, const void* c, size_t n, cudaStream_t stream);

// Plain 16-byte copy used across links (peer, zero-copy): b[i] = a[i] for n16
// vectors, one per thread; a and b 16-byte aligned.
void launch_copy(const void* a, void* b, size_t n16, cudaStream_t stream);
inline unsigned copy_grid(size_t n16) {
  return static_cast<unsigned>((n16 + kStreamBlock - 1) / kStreamBlock);
}

}  // namespace gpuvs
