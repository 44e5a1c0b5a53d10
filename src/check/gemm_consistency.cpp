// GEMM consistency on one GPU. See gemm_consistency.h.
#include "check/gemm_consistency.h"

#include <fmt/format.h>

#include <vector>

#include "core/stats.h"
#include "gpu/check.h"
#include "measure/cuda_timer.h"

namespace gpuvs::check {

namespace {

// FNV-1a over the bytes of D: any flipped bit changes it.
uint64_t hash_bytes(const std::vector<unsigned char>& bytes) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

}  // namespace

GemmConsistency run_gemm_consistency(const SystemInfo& system, int device,
                                     const GemmConsistencyOptions& o, WallClock& clock) {
  DeviceScope scope(device);
  const GemmTypes& types = gemm_types(o.precision);
  if (auto why = gemm_unsupported_reason(o.precision, system.gpus.at(device).compute_capability))
    throw CannotRunError(fmt::format("GEMM consistency {}: {}", types.name, *why));
  Stream stream;
  LtHandle handle;
  GemmRunner runner(o.precision, o.shape, handle, stream.get());
  // cuBLASLt's first heuristic only: a timed choice could differ from GPU to GPU.
  const std::optional<GemmAlgo> algo = runner.choose(o.shape, 1, gemm_search_options(), clock);
  if (!algo)
    throw Error(fmt::format("GEMM consistency {}: cuBLASLt has no algorithm for {}x{}x{}",
                            types.name, o.shape.m, o.shape.n, o.shape.k));
  GemmConsistency r;
  r.figures.gpu = device;
  r.figures.gpu_name = system.gpus.at(device).name;
  r.figures.precision = std::string(types.name);
  r.algorithm = fmt::format("algorithm {} tile {} stages {} split-k {}", algo->config.id,
                            algo->config.tile, algo->config.stages, algo->config.splitk);

  const size_t d_bytes = size_t(o.shape.m) * size_t(o.shape.n) * elem_bytes(types.d);
  std::vector<unsigned char> host(d_bytes);
  for (int i = 0; i < std::max(1, o.runs); ++i) {
    GPUVS_CUDA_CHECK(cudaMemsetAsync(runner.d(), 0xFF, d_bytes, stream.get()));
    runner.enqueue(*algo, stream.get());
    GPUVS_CUDA_CHECK(
        cudaMemcpyAsync(host.data(), runner.d(), d_bytes, cudaMemcpyDeviceToHost, stream.get()));
    GPUVS_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
    r.figures.hashes.push_back(hash_bytes(host));
  }

  EventTimed timed(stream.get(), [&](cudaStream_t s) { runner.enqueue(*algo, s); });
  const Measurement m = measure(timed, clock, o.timing);
  const double s = median(m.seconds_per_iteration);
  r.figures.flops = s > 0 ? o.shape.flops() / s : 0;

  const Validation v = runner.validate(*algo);
  r.valid = v.passed;
  r.validation = v.detail;
  return r;
}

}  // namespace gpuvs::check
