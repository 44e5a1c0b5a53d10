#include "gpu/gemm_spec.h"

#include <fmt/format.h>

namespace gpuvs {

namespace {

const char* elem_name(GemmElem t, bool tf32) {
  switch (t) {
    case GemmElem::kF64:
      return "fp64";
    case GemmElem::kF32:
      return tf32 ? "fp32 (tf32)" : "fp32";
    case GemmElem::kF16:
      return "fp16";
    case GemmElem::kBF16:
      return "bf16";
    case GemmElem::kE4M3:
      return "e4m3";
    case GemmElem::kE5M2:
      return "e5m2";
    case GemmElem::kI8:
      return "i8";
    case GemmElem::kI32:
      break;
  }
  return "i32";
}

}  // namespace

size_t gemm_elem_bytes(GemmElem t) {
  switch (t) {
    case GemmElem::kF64:
      return 8;
    case GemmElem::kF32:
    case GemmElem::kI32:
      return 4;
    case GemmElem::kF16:
    case GemmElem::kBF16:
      return 2;
    case GemmElem::kE4M3:
    case GemmElem::kE5M2:
    case GemmElem::kI8:
      break;
  }
  return 1;
}

bool is_fp8(GemmElem t) {
  return t == GemmElem::kE4M3 || t == GemmElem::kE5M2;
}

LtGemmSpec tn_gemm(GemmShape s, GemmElem a, GemmElem b, GemmElem d) {
  LtGemmSpec g;
  g.trans_a = true;
  g.a = {a, s.k, s.m, s.k};
  g.b = {b, s.k, s.n, s.k};
  g.d = {d, s.m, s.n, s.m};
  return g;
}

DenseGemms dense_gemms(int64_t rows, int64_t in, int64_t out, int64_t ld_x, GemmElem t, bool tf32) {
  RowMajorGemm g;
  g.a = g.b = g.c = t;
  g.tf32 = tf32;
  DenseGemms d{g, g, g};
  RowMajorGemm& f = d.forward;
  f.tb = true;
  f.m = rows;
  f.n = out;
  f.k = in;
  f.lda = ld_x;
  f.ldb = in;
  f.ldc = out;
  RowMajorGemm& x = d.dgrad;
  x.m = rows;
  x.n = in;
  x.k = out;
  x.lda = out;
  x.ldb = in;
  x.ldc = ld_x;
  RowMajorGemm& w = d.wgrad;
  w.ta = true;
  w.m = out;
  w.n = in;
  w.k = rows;
  w.lda = out;
  w.ldb = ld_x;
  w.ldc = in;
  return d;
}

LtGemmSpec to_lt_spec(const RowMajorGemm& g) {
  LtGemmSpec s;
  s.trans_a = g.tb;
  s.trans_b = g.ta;
  s.a = {g.b, g.tb ? g.k : g.n, g.tb ? g.n : g.k, g.ldb, g.batch, g.stride_b};
  s.b = {g.a, g.ta ? g.m : g.k, g.ta ? g.k : g.m, g.lda, g.batch, g.stride_a};
  s.d = {g.c, g.n, g.m, g.ldc, g.batch, g.stride_c};
  s.compute = g.tf32 ? GemmCompute::k32FFastTf32 : GemmCompute::k32F;
  s.scale = GemmElem::kF32;
  s.bias = g.bias;
  s.fast_accum = g.fast_accum;
  s.accumulate = g.accumulate;
  s.a_scale = g.b_scale;  // cuBLASLt's A: our B
  s.b_scale = g.a_scale;
  return s;
}

std::string describe(const RowMajorGemm& g) {
  // D is never TF32: the label belongs to the inputs the tensor cores round.
  return fmt::format("{}: m {} n {} k {}{}, A {} stored {}, B {} stored {}, D {}{}",
                     g.name.empty() ? std::string("BERT GEMM") : g.name, g.m, g.n, g.k,
                     g.batch > 1 ? fmt::format(", batch {}", g.batch) : std::string(),
                     elem_name(g.a, g.tf32), g.ta ? "(k, m)" : "(m, k)", elem_name(g.b, g.tf32),
                     g.tb ? "(n, k)" : "(k, n)", elem_name(g.c, false), g.bias ? ", + bias" : "");
}

std::optional<std::string> fp8_layout_problem(const RowMajorGemm& g) {
  if (g.ta || !g.tb)
    return describe(g) + ": FP8 GEMMs take A stored (m, k) and B stored (n, k) only";
  for (int64_t v : {g.m, g.n, g.k, g.lda, g.ldb, g.ldc})
    if (v % 16 != 0)
      return describe(g) +
             ": FP8 GEMMs need sizes and leading dimensions that are "
             "multiples of 16";
  if (g.batch != 1) return describe(g) + ": FP8 GEMMs are not batched here";
  return std::nullopt;
}

std::vector<Fp8Attempt> fp8_attempts(bool bias, bool fast_accum) {
  std::vector<Fp8Attempt> out;
  for (const bool fuse : {true, false}) {
    if (fuse && !bias) continue;
    for (const bool fast : {true, false}) {
      if (fast && !fast_accum) continue;
      out.push_back({fuse, fast});
    }
  }
  return out;
}

std::string describe_failed_attempt(const Fp8Attempt& a, size_t algorithms,
                                    std::string_view status) {
  return fmt::format("; bias {}, fast accumulation {}: {} algorithm(s), last status {}",
                     a.fuse_bias ? "fused" : "separate", a.fast_accum ? "on" : "off", algorithms,
                     status);
}

std::string describe(const LtPlan& p) {
  std::string out = fmt::format("algo {} tile {}", p.algo_id, p.tile);
  if (p.bias) out += p.fused_bias ? ", bias fused" : ", bias separate";
  if (p.fast_accum) out += ", fast accumulation";
  return out;
}

std::optional<FastestPick> pick_fastest(size_t count,
                                        const std::function<std::optional<double>(size_t)>& time) {
  std::vector<double> seconds(count, -1.0);  // negative: never ran
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t j = 0; j < count; ++j) {
      const size_t i = pass == 0 ? j : count - 1 - j;
      if (pass == 1 && seconds[i] < 0) continue;  // it failed in the first pass
      const std::optional<double> t = time(i);
      if (t && (seconds[i] < 0 || *t < seconds[i])) seconds[i] = *t;
    }
  }
  std::optional<FastestPick> best;
  int tried = 0;
  for (size_t i = 0; i < count; ++i) {
    if (seconds[i] < 0) continue;
    ++tried;
    if (!best || seconds[i] < best->seconds) best = FastestPick{i, seconds[i], 0};
  }
  if (best) best->tried = tried;
  return best;
}

}  // namespace gpuvs
