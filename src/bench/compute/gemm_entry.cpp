// The registration of compute.gemm, whose entry point is in gemm.cpp. It sits in a
// file of its own only while gemm.cpp is being changed on another branch; once both
// are merged, this line belongs at the end of gemm.cpp, like every other benchmark's.
#include "bench/benchmarks.h"

namespace gpuvs {

GPUVS_BENCHMARK(run_compute_gemm, "compute.gemm");

}  // namespace gpuvs
