// Entry points of the benchmark files, one per benchmark of the table in
// suite/produces.cpp; suite/registry.cpp maps the table's names to them. A benchmark
// returns Results built by the harness, never raw timings.
#pragma once

#include <vector>

#include "core/run_file.h"
#include "suite/context.h"

namespace gpuvs {

std::vector<Result> run_hbm(BenchContext& ctx);               // hbm_stream.cpp
std::vector<Result> run_cache(BenchContext& ctx);             // cache.cpp
std::vector<Result> run_latency(BenchContext& ctx);           // latency.cpp
std::vector<Result> run_capacity(BenchContext& ctx);          // capacity.cpp
std::vector<Result> run_host_link(BenchContext& ctx);         // host_link.cpp
std::vector<Result> run_peer(BenchContext& ctx);              // peer.cpp (every selected GPU)
std::vector<Result> run_launch(BenchContext& ctx);            // launch.cpp
std::vector<Result> run_compute_fma(BenchContext& ctx);       // compute_fma.cpp
std::vector<Result> run_compute_gemm(BenchContext& ctx);      // compute_gemm.cpp
std::vector<Result> run_compute_roofline(BenchContext& ctx);  // roofline.cpp
std::vector<Result> run_collectives(BenchContext& ctx);       // collectives.cpp (all GPUs)
std::vector<Result> run_collective_study(BenchContext& ctx);  // collective_study.cpp

}  // namespace gpuvs
