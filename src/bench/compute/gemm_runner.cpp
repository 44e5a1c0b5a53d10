// The GEMM precisions and the runner: operands, cuBLASLt descriptors, the timed
// choice among cuBLASLt's heuristic algorithms, one checked run. See gemm_runner.h.
#include "bench/compute/gemm_runner.h"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <cstring>

#include "core/stats.h"
#include "gpu/check.h"
#include "measure/cuda_timer.h"

namespace gpuvs {

namespace {

constexpr size_t kWorkspaceBytes = size_t{64} << 20;  // Hopper kernels want 32 MiB+
constexpr size_t kScaleSlot = 256;
constexpr uint64_t kSeedA = 0xA5A5'0001, kSeedB = 0x5A5A'0002;

// Tolerances (docs/compute.md derives them). tau is per unit of sum_k |a_ik b_kj|; a
// wrong result (wrong layout, scale or data) shows an error of about |d_ij|, which is
// ~1.3 / sqrt(K) of that sum for our uniform inputs (>= 0.01 up to K = 16384).
constexpr double kTauFp64 = 0x1.0p-40;     // 2^13 FP64 unit roundoffs: FP64 DMMA + FP64 reference
constexpr double kTauFp32Acc = 0x1.0p-16;  // 256 FP32 unit roundoffs: FP32 accumulation
constexpr double kTauTf32 = 0x1.0p-9;  // inputs cut to 10-bit mantissas: <= 2 x 2^-10 per product
constexpr double kTauFp8 = 0x1.0p-11;  // FP8 tensor-core partial sums keep ~14 bits before
                                       // cuBLASLt promotes them to FP32

// clang-format off
const std::array<GemmTypes, 8> kTypes = {{
    {"fp64", "FP64 GEMM (DMMA)", ElemType::kF64, ElemType::kF64, ElemType::kF64,
     GemmElem::kF64, GemmElem::kF64, GemmElem::kF64,
     GemmCompute::k64F, "64F", GemmElem::kF64,
     ArithRate::kTensorFp64, false, 1, 1, {kTauFp64, 0x1.0p-53},
     "FP64 throughout; tau covers FP64 accumulation and the FP64 reference", 0},
    {"fp32", "FP32 SGEMM (no TF32)", ElemType::kF32, ElemType::kF32, ElemType::kF32,
     GemmElem::kF32, GemmElem::kF32, GemmElem::kF32,
     GemmCompute::k32F, "32F", GemmElem::kF32,
     ArithRate::kFp32Fma, false, 1, 1, {kTauFp32Acc, 0x1.0p-24},
     "FP32 inputs used exactly, FP32 accumulation", 0},
    {"tf32", "TF32 GEMM", ElemType::kF32, ElemType::kF32, ElemType::kF32,
     GemmElem::kF32, GemmElem::kF32, GemmElem::kF32,
     GemmCompute::k32FFastTf32, "32F_FAST_TF32", GemmElem::kF32,
     ArithRate::kTensorTf32, false, 1, 1, {kTauTf32, 0x1.0p-24},
     "reference uses the FP32 inputs; tau is the worst case of rounding them to TF32", 80},
    {"fp16", "FP16 GEMM (FP32 accumulate)", ElemType::kF16, ElemType::kF16, ElemType::kF16,
     GemmElem::kF16, GemmElem::kF16, GemmElem::kF16,
     GemmCompute::k32F, "32F", GemmElem::kF32,
     ArithRate::kTensorFp16, false, 1, 1, {kTauFp32Acc, 0x1.0p-11},
     "FP16 inputs exact, FP32 accumulation, FP16 output rounding", 0},
    {"bf16", "BF16 GEMM (FP32 accumulate)", ElemType::kBF16, ElemType::kBF16, ElemType::kBF16,
     GemmElem::kBF16, GemmElem::kBF16, GemmElem::kBF16,
     GemmCompute::k32F, "32F", GemmElem::kF32,
     ArithRate::kTensorBf16, false, 1, 1, {kTauFp32Acc, 0x1.0p-8},
     "BF16 inputs exact, FP32 accumulation, BF16 output rounding", 80},
    {"fp8_e4m3", "FP8 GEMM (E4M3 x E4M3, BF16 out)", ElemType::kE4M3, ElemType::kE4M3,
     ElemType::kBF16, GemmElem::kE4M3, GemmElem::kE4M3, GemmElem::kBF16,
     GemmCompute::k32F, "32F", GemmElem::kF32,
     ArithRate::kTensorFp8, false, 0.5f, 4.0f, {kTauFp8, 0x1.0p-8},
     "FP8 inputs and scale factors exact, FP8 tensor-core partial sums, BF16 output rounding",
     89},
    {"fp8_e5m2", "FP8 GEMM (E5M2 x E4M3, BF16 out)", ElemType::kE5M2, ElemType::kE4M3,
     ElemType::kBF16, GemmElem::kE5M2, GemmElem::kE4M3, GemmElem::kBF16,
     GemmCompute::k32F, "32F", GemmElem::kF32,
     ArithRate::kTensorFp8, false, 0.5f, 4.0f, {kTauFp8, 0x1.0p-8},
     "FP8 inputs and scale factors exact, FP8 tensor-core partial sums, BF16 output rounding",
     89},
    {"int8", "INT8 GEMM (INT32 accumulate)", ElemType::kI8, ElemType::kI8, ElemType::kI32,
     GemmElem::kI8, GemmElem::kI8, GemmElem::kI32,
     GemmCompute::k32I, "32I", GemmElem::kI32,
     ArithRate::kTensorInt8, true, 1, 1, {0, 0},
     "integer arithmetic: the result must equal the reference exactly", 75},
}};
constexpr std::array<GemmPrecision, 8> kPrecisions = {
    GemmPrecision::kFp64, GemmPrecision::kFp32, GemmPrecision::kTf32, GemmPrecision::kFp16,
    GemmPrecision::kBf16, GemmPrecision::kFp8E4m3, GemmPrecision::kFp8E5m2, GemmPrecision::kInt8};
// clang-format on

size_t count(int64_t x, int64_t y) {
  return static_cast<size_t>(x) * static_cast<size_t>(y);
}

}  // namespace

std::span<const GemmPrecision> gemm_precisions() {
  return kPrecisions;
}

const GemmTypes& gemm_types(GemmPrecision p) {
  return kTypes.at(static_cast<size_t>(p));
}

std::optional<std::string> gemm_unsupported_reason(GemmPrecision p, std::string_view cc) {
  const GemmTypes& t = gemm_types(p);
  if (compute_capability_x10(cc) >= t.min_cc) return std::nullopt;
  return fmt::format(
      "{} needs compute capability {}.{} or newer (tensor cores for it); this GPU "
      "is {}",
      t.label, t.min_cc / 10, t.min_cc % 10, cc);
}

double gemm_operand_bytes(GemmPrecision p, GemmShape s) {
  const GemmTypes& t = gemm_types(p);
  const double mk = double(s.m) * double(s.k), kn = double(s.k) * double(s.n);
  const double mn = double(s.m) * double(s.n);
  return mk * double(elem_bytes(t.a)) + kn * double(elem_bytes(t.b)) +
         2 * mn * double(elem_bytes(t.d));
}

MeasureOptions gemm_search_options() {
  MeasureOptions o;
  o.min_samples = 3;
  o.max_samples = 6;
  o.time_cap_s = 0.02;
  o.min_sample_s = 2e-3;
  o.warmup_cap_s = 0.02;
  o.max_warmup_batches = 4;
  o.target_noise = 0.01;
  return o;
}

GemmRunner::GemmRunner(GemmPrecision p, GemmShape capacity, const LtHandle& handle,
                       cudaStream_t stream)
    : p_(p),
      types_(gemm_types(p)),
      capacity_(capacity),
      handle_(handle),
      stream_(stream),
      a_(count(capacity.k, capacity.m) * elem_bytes(types_.a)),
      b_(count(capacity.k, capacity.n) * elem_bytes(types_.b)),
      d_(count(capacity.m, capacity.n) * elem_bytes(types_.d)),
      scales_(2 * kScaleSlot),
      workspace_(kWorkspaceBytes) {
  fill_random(a_.get(), types_.a, count(capacity.k, capacity.m), kSeedA, stream_);
  fill_random(b_.get(), types_.b, count(capacity.k, capacity.n), kSeedB, stream_);
  if (types_.a == ElemType::kE4M3 || types_.a == ElemType::kE5M2) {
    // Each scale in its own 256-byte slot: cuBLASLt checks the alignment of the scale
    // pointers (as of an allocation) when it picks algorithms.
    auto* base = static_cast<unsigned char*>(scales_.get());
    a_scale_ = reinterpret_cast<const float*>(base);
    b_scale_ = reinterpret_cast<const float*>(base + kScaleSlot);
    GPUVS_CUDA_CHECK(
        cudaMemcpyAsync(base, &types_.scale_a, sizeof(float), cudaMemcpyHostToDevice, stream_));
    GPUVS_CUDA_CHECK(cudaMemcpyAsync(base + kScaleSlot, &types_.scale_b, sizeof(float),
                                     cudaMemcpyHostToDevice, stream_));
  }
  switch (types_.scale) {
    case GemmElem::kF64: {
      const double one = 1, zero = 0;
      std::memcpy(alpha_, &one, sizeof(one));
      std::memcpy(beta_, &zero, sizeof(zero));
      break;
    }
    case GemmElem::kI32: {
      const int32_t one = 1, zero = 0;
      std::memcpy(alpha_, &one, sizeof(one));
      std::memcpy(beta_, &zero, sizeof(zero));
      break;
    }
    default: {
      const float one = 1, zero = 0;
      std::memcpy(alpha_, &one, sizeof(one));
      std::memcpy(beta_, &zero, sizeof(zero));
      break;
    }
  }
  GPUVS_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

std::optional<GemmAlgo> GemmRunner::choose(GemmShape shape, int max_algos,
                                           const MeasureOptions& search, WallClock& clock) {
  if (shape.m > capacity_.m || shape.n > capacity_.n || shape.k > capacity_.k)
    throw Error(fmt::format("GEMM shape {}x{}x{} exceeds the operands allocated", shape.m, shape.n,
                            shape.k));
  LtGemmSpec spec = tn_gemm(shape, types_.a_lt, types_.b_lt, types_.d_lt);
  spec.compute = types_.compute;
  spec.scale = types_.scale;
  auto gemm = std::make_shared<LtGemm>(handle_, spec);
  if (a_scale_ != nullptr) gemm->set_fp8_scales(a_scale_, b_scale_);
  const std::vector<LtAlgo> heuristics =
      gemm->heuristics(workspace_.bytes(), std::max(1, max_algos));
  const auto pick = pick_fastest(heuristics.size(), [&](size_t i) -> std::optional<double> {
    EventTimed timed(stream_, [&](cudaStream_t s) { enqueue(*gemm, heuristics[i], s); });
    try {
      return median(measure(timed, clock, search).seconds_per_iteration);
    } catch (const Error&) {
      // An algorithm the heuristic offered that does not launch for this problem is
      // skipped; the others still compete. A sticky CUDA error fails the next call.
      GPUVS_CUDA_CHECK(cudaStreamSynchronize(stream_));
      return std::nullopt;
    }
  });
  if (!pick) return std::nullopt;
  const LtAlgo& h = heuristics[pick->index];
  gemm->choose(h);
  GemmAlgo best;
  best.shape = shape;
  best.algo = h.algo;
  best.workspace_bytes = h.workspace_bytes;
  best.heuristic_index = h.heuristic_index;
  best.tried = pick->tried;
  best.config = lt_algo_config(h.algo);
  best.seconds = pick->seconds;
  best.gemm = std::move(gemm);
  return best;
}

void GemmRunner::enqueue(const LtGemm& gemm, const LtAlgo& algo, cudaStream_t stream) const {
  LtOperands o;
  o.alpha = alpha_;
  o.beta = beta_;
  o.a = a_.get();
  o.b = b_.get();
  o.d = d_.get();
  o.workspace = workspace_.get();
  o.workspace_bytes = algo.workspace_bytes;
  o.stream = stream;
  GPUVS_CUBLAS_CHECK(gemm.matmul(o, algo.algo));
}

void GemmRunner::enqueue(const GemmAlgo& algo, cudaStream_t stream) const {
  enqueue(*algo.gemm, {algo.algo, algo.workspace_bytes, algo.heuristic_index}, stream);
}

GemmCheck GemmRunner::check(GemmShape shape) {
  return check_gemm(view(shape), types_.tolerance, stream_);
}

GemmView GemmRunner::view(GemmShape shape) const {
  GemmView v;
  v.a = a_.get();
  v.a_type = types_.a;
  v.b = b_.get();
  v.b_type = types_.b;
  v.d = d_.get();
  v.d_type = types_.d;
  v.m = shape.m;
  v.n = shape.n;
  v.k = shape.k;
  v.scale = double(types_.scale_a) * double(types_.scale_b);  // alpha = 1
  return v;
}

GemmCheck GemmRunner::run_and_check(const GemmAlgo& algo) {
  fill_poison(d_.get(), types_.d, count(algo.shape.m, algo.shape.n), stream_);
  enqueue(algo, stream_);
  return check(algo.shape);
}

Validation GemmRunner::validate(const GemmAlgo& algo) {
  const GemmCheck c = run_and_check(algo);
  return {c.passed, describe_check(c, types_.tolerance)};
}

std::string describe_check(const GemmCheck& c, const GemmTolerance& t) {
  std::string s = fmt::format(
      "D poisoned, one GEMM run, then {} elements ({} whole rows and {} whole columns) "
      "against an FP64 reference from the stored inputs: {} outside the bound; all {} row and "
      "column checksums: {} outside the bound; worst error {:.3g} of its bound (tau {:.3g}, "
      "u_out {:.3g})",
      c.elements_checked, c.sampled_rows, c.sampled_cols, c.element_failures, c.checksums_checked,
      c.checksum_failures, c.worst_ratio, t.relative, t.output_roundoff);
  if (c.element_failures > 0)
    s += fmt::format("; first bad element D({}, {})", c.first_bad_row, c.first_bad_col);
  return s;
}

}  // namespace gpuvs
