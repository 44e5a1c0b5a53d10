// GPUVS_HD marks small inline functions that host (.cpp, g++) and device (.cu, nvcc)
// code both call, so that a benchmark's expected values and its kernels share one
// definition.
#pragma once

#if defined(__CUDACC__)
#define GPUVS_HD __host__ __device__
#else
#define GPUVS_HD
#endif
