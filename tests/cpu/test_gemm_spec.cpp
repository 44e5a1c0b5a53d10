// The plain-C++ half of the one cuBLASLt GEMM type (gpu/gemm_spec.h): the row-major to
// column-major translation every model GEMM goes through, the "TN" layout of
// compute.gemm, the FP8 rules and attempts, the texts of plans and errors, and the
// choice of the fastest timed algorithm.
#include "gpu/gemm_spec.h"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <vector>

#include "models/layers/gemm_dtype.h"

namespace gpuvs {
namespace {

TEST(GemmSpec, ShapeCountsMultiplyAddsAsTwoFlops) {
  EXPECT_DOUBLE_EQ((GemmShape{8192, 8192, 8192}.flops()), 2.0 * 8192.0 * 8192.0 * 8192.0);
  EXPECT_DOUBLE_EQ((GemmShape{512, 384, 256}.flops()), 2.0 * 512 * 384 * 256);
  EXPECT_EQ((GemmShape{1, 2, 3}), (GemmShape{1, 2, 3}));
  EXPECT_NE((GemmShape{1, 2, 3}), (GemmShape{1, 3, 2}));
}

TEST(GemmSpec, ElementSizesAndMatrixBytes) {
  EXPECT_EQ(gemm_elem_bytes(GemmElem::kF64), 8u);
  EXPECT_EQ(gemm_elem_bytes(GemmElem::kF32), 4u);
  EXPECT_EQ(gemm_elem_bytes(GemmElem::kI32), 4u);
  EXPECT_EQ(gemm_elem_bytes(GemmElem::kBF16), 2u);
  EXPECT_EQ(gemm_elem_bytes(GemmElem::kF16), 2u);
  EXPECT_EQ(gemm_elem_bytes(GemmElem::kE4M3), 1u);
  EXPECT_EQ(gemm_elem_bytes(GemmElem::kE5M2), 1u);
  EXPECT_EQ(gemm_elem_bytes(GemmElem::kI8), 1u);
  EXPECT_TRUE(is_fp8(GemmElem::kE4M3));
  EXPECT_TRUE(is_fp8(GemmElem::kE5M2));
  EXPECT_FALSE(is_fp8(GemmElem::kI8));
  // A matrix spans cols leading dimensions, whatever its row count.
  const LtMatrix m{GemmElem::kBF16, 100, 7, 128};
  EXPECT_EQ(m.bytes(), 7u * 128u * 2u);
}

TEST(GemmSpec, TnGemmStoresBothOperandsKMajor) {
  const LtGemmSpec s = tn_gemm({512, 384, 256}, GemmElem::kE5M2, GemmElem::kE4M3, GemmElem::kBF16);
  EXPECT_TRUE(s.trans_a);
  EXPECT_FALSE(s.trans_b);
  EXPECT_EQ(s.a, (LtMatrix{GemmElem::kE5M2, 256, 512, 256}));
  EXPECT_EQ(s.b, (LtMatrix{GemmElem::kE4M3, 256, 384, 256}));
  EXPECT_EQ(s.d, (LtMatrix{GemmElem::kBF16, 512, 384, 512}));
  EXPECT_TRUE(s.fp8());
  EXPECT_FALSE(s.bias);
}

// BERT's pooler y (rows, out) = x (rows, in) W^T + b with x's rows ld_x apart (the
// [CLS] rows of (B, T, C)): cuBLASLt computes y^T = W x^T, W's storage read transposed.
TEST(GemmSpec, DenseForwardSwapsOperandsAndKeepsTheInputStride) {
  const int64_t rows = 8, in = 1024, out = 3072, ld_x = 128 * 1024;
  DenseGemms g = dense_gemms(rows, in, out, ld_x, GemmElem::kBF16, false);
  g.forward.bias = true;
  const LtGemmSpec f = to_lt_spec(g.forward);
  EXPECT_TRUE(f.trans_a);
  EXPECT_FALSE(f.trans_b);
  EXPECT_EQ(f.a, (LtMatrix{GemmElem::kBF16, in, out, in}));
  EXPECT_EQ(f.b, (LtMatrix{GemmElem::kBF16, in, rows, ld_x}));
  EXPECT_EQ(f.d, (LtMatrix{GemmElem::kBF16, out, rows, out}));
  EXPECT_EQ(f.compute, GemmCompute::k32F);
  EXPECT_EQ(f.scale, GemmElem::kF32);
  EXPECT_TRUE(f.bias);
  EXPECT_FALSE(f.fp8());
  // dx is written with x's stride; wgrad reads x with it.
  const LtGemmSpec d = to_lt_spec(g.dgrad);
  EXPECT_EQ(d.d, (LtMatrix{GemmElem::kBF16, in, rows, ld_x}));
  const LtGemmSpec w = to_lt_spec(g.wgrad);
  EXPECT_EQ(w.a, (LtMatrix{GemmElem::kBF16, in, rows, ld_x}));
  EXPECT_FALSE(w.bias);
  EXPECT_DOUBLE_EQ(g.forward.flops(), 2.0 * rows * in * out);
}

// The ResNet classifier's three GEMMs (models/layers/fully_connected.cpp), against the
// column-major layouts it was first written with: forward y^T (out x N) = W^T-stored
// (in x out)^T x^T (in x N); dgrad dx^T (in x N) = W-stored (in x out) dy^T (out x N);
// wgrad dW^T (in x out) = x^T (in x N) (dy^T (out x N))^T.
TEST(GemmSpec, ClassifierGemmsKeepTheirColumnMajorLayouts) {
  const int64_t n = 256, in = 2048, out = 1000;
  const GemmElem t = GemmElem::kF16;
  DenseGemms g = dense_gemms(n, in, out, in, t, true);
  g.forward.c = GemmElem::kF32;

  const LtGemmSpec fs = to_lt_spec(g.forward);
  EXPECT_TRUE(fs.trans_a);
  EXPECT_FALSE(fs.trans_b);
  EXPECT_EQ(fs.a, (LtMatrix{t, in, out, in}));
  EXPECT_EQ(fs.b, (LtMatrix{t, in, n, in}));
  EXPECT_EQ(fs.d, (LtMatrix{GemmElem::kF32, out, n, out}));
  EXPECT_EQ(fs.compute, GemmCompute::k32FFastTf32);

  const LtGemmSpec ds = to_lt_spec(g.dgrad);
  EXPECT_FALSE(ds.trans_a);
  EXPECT_FALSE(ds.trans_b);
  EXPECT_EQ(ds.a, (LtMatrix{t, in, out, in}));
  EXPECT_EQ(ds.b, (LtMatrix{t, out, n, out}));
  EXPECT_EQ(ds.d, (LtMatrix{t, in, n, in}));
  EXPECT_EQ(ds.compute, GemmCompute::k32FFastTf32);

  const LtGemmSpec ws = to_lt_spec(g.wgrad);
  EXPECT_FALSE(ws.trans_a);
  EXPECT_TRUE(ws.trans_b);
  EXPECT_EQ(ws.a, (LtMatrix{t, in, n, in}));
  EXPECT_EQ(ws.b, (LtMatrix{t, out, n, out}));
  EXPECT_EQ(ws.d, (LtMatrix{t, in, out, in}));
}

// Attention's strided batches: each operand keeps its own batch stride across the swap.
TEST(GemmSpec, BatchedGemmCarriesStridesToTheSwappedOperands) {
  RowMajorGemm g;  // scores (T, T) = Q (T, D) K^T, B*H = 32 batches
  g.tb = true;
  g.m = g.n = 128;
  g.k = 64;
  g.lda = g.ldb = 64;
  g.ldc = 128;
  g.batch = 32;
  g.stride_a = 128 * 64 + 1;  // distinct, to see which goes where
  g.stride_b = 128 * 64 + 2;
  g.stride_c = 128 * 128;
  const LtGemmSpec s = to_lt_spec(g);
  EXPECT_EQ(s.a.batch, 32);
  EXPECT_EQ(s.a.stride, g.stride_b);
  EXPECT_EQ(s.b.batch, 32);
  EXPECT_EQ(s.b.stride, g.stride_a);
  EXPECT_EQ(s.d.batch, 32);
  EXPECT_EQ(s.d.stride, g.stride_c);
  EXPECT_DOUBLE_EQ(g.flops(), 2.0 * 128 * 128 * 64 * 32);
}

TEST(GemmSpec, Fp8ScalesAndFlagsFollowTheSwap) {
  float a_scale = 0, b_scale = 0;  // only their addresses matter
  RowMajorGemm g;
  g.a = GemmElem::kE5M2;
  g.b = GemmElem::kE4M3;
  g.c = GemmElem::kF32;
  g.tb = true;
  g.a_scale = &a_scale;
  g.b_scale = &b_scale;
  g.accumulate = true;
  g.fast_accum = true;
  const LtGemmSpec s = to_lt_spec(g);
  EXPECT_TRUE(s.fp8());
  EXPECT_EQ(s.a.type, GemmElem::kE4M3);  // cuBLASLt's A is our B
  EXPECT_EQ(s.b.type, GemmElem::kE5M2);
  EXPECT_EQ(s.a_scale, &b_scale);
  EXPECT_EQ(s.b_scale, &a_scale);
  EXPECT_TRUE(s.accumulate);
  EXPECT_TRUE(s.fast_accum);
}

RowMajorGemm fp8_forward() {
  RowMajorGemm g;
  g.name = "ffn1 fwd (FP8, every layer)";
  g.a = g.b = GemmElem::kE4M3;
  g.c = GemmElem::kBF16;
  g.tb = true;
  g.m = 512;
  g.n = 4096;
  g.k = 1024;
  g.lda = g.ldb = 1024;
  g.ldc = 4096;
  g.bias = true;
  return g;
}

TEST(GemmSpec, DescribeNamesShapeTypesStorageAndBias) {
  EXPECT_EQ(describe(fp8_forward()),
            "ffn1 fwd (FP8, every layer): m 512 n 4096 k 1024, A e4m3 stored (m, k), B e4m3 "
            "stored (n, k), D bf16, + bias");
  RowMajorGemm w;  // an unnamed TF32 weight gradient
  w.ta = true;
  w.m = 1024;
  w.n = 4096;
  w.k = 512;
  w.tf32 = true;
  EXPECT_EQ(describe(w),
            "BERT GEMM: m 1024 n 4096 k 512, A fp32 (tf32) stored (k, m), B fp32 (tf32) stored "
            "(k, n), D fp32");
  RowMajorGemm b;
  b.name = "scores";
  b.a = b.b = b.c = GemmElem::kF16;
  b.m = b.n = 128;
  b.k = 64;
  b.batch = 32;
  b.tb = true;
  EXPECT_EQ(describe(b),
            "scores: m 128 n 128 k 64, batch 32, A fp16 stored (m, k), B fp16 stored (n, k), "
            "D fp16");
  RowMajorGemm d;
  d.a = GemmElem::kE5M2;
  d.b = GemmElem::kE4M3;
  d.c = GemmElem::kBF16;
  EXPECT_NE(describe(d).find("A e5m2 stored (m, k), B e4m3 stored (k, n), D bf16"),
            std::string::npos);
}

TEST(GemmSpec, Fp8LayoutRulesInOrderWithTheGemmNamed) {
  EXPECT_EQ(fp8_layout_problem(fp8_forward()), std::nullopt);
  const std::string name = describe(fp8_forward());

  RowMajorGemm nn = fp8_forward();
  nn.tb = false;
  EXPECT_EQ(fp8_layout_problem(nn),
            describe(nn) + ": FP8 GEMMs take A stored (m, k) and B stored (n, k) only");
  RowMajorGemm ta = fp8_forward();
  ta.ta = true;
  ta.m = 500;  // the layout is reported before the sizes
  EXPECT_EQ(fp8_layout_problem(ta),
            describe(ta) + ": FP8 GEMMs take A stored (m, k) and B stored (n, k) only");

  const std::string sixteen =
      ": FP8 GEMMs need sizes and leading dimensions that are multiples of 16";
  for (int64_t RowMajorGemm::*field :
       {&RowMajorGemm::m, &RowMajorGemm::n, &RowMajorGemm::k, &RowMajorGemm::lda,
        &RowMajorGemm::ldb, &RowMajorGemm::ldc}) {
    RowMajorGemm g = fp8_forward();
    g.*field += 8;
    EXPECT_EQ(fp8_layout_problem(g), describe(g) + sixteen);
  }
  RowMajorGemm batched = fp8_forward();
  batched.batch = 2;
  EXPECT_EQ(fp8_layout_problem(batched), describe(batched) + ": FP8 GEMMs are not batched here");
}

TEST(GemmSpec, Fp8AttemptsFusedBeforeSeparateFastBeforeExact) {
  const auto all = fp8_attempts(true, true);
  ASSERT_EQ(all.size(), 4u);
  EXPECT_TRUE(all[0].fuse_bias && all[0].fast_accum);
  EXPECT_TRUE(all[1].fuse_bias && !all[1].fast_accum);
  EXPECT_TRUE(!all[2].fuse_bias && all[2].fast_accum);
  EXPECT_TRUE(!all[3].fuse_bias && !all[3].fast_accum);

  const auto no_bias = fp8_attempts(false, true);
  ASSERT_EQ(no_bias.size(), 2u);
  EXPECT_TRUE(!no_bias[0].fuse_bias && no_bias[0].fast_accum);
  EXPECT_TRUE(!no_bias[1].fuse_bias && !no_bias[1].fast_accum);

  const auto exact = fp8_attempts(true, false);
  ASSERT_EQ(exact.size(), 2u);
  EXPECT_TRUE(exact[0].fuse_bias && !exact[0].fast_accum);
  EXPECT_TRUE(!exact[1].fuse_bias && !exact[1].fast_accum);

  const auto plain = fp8_attempts(false, false);
  ASSERT_EQ(plain.size(), 1u);
  EXPECT_FALSE(plain[0].fuse_bias || plain[0].fast_accum);
}

TEST(GemmSpec, FailedAttemptAndPlanTexts) {
  EXPECT_EQ(describe_failed_attempt({true, false}, 3, "CUBLAS_STATUS_NOT_SUPPORTED"),
            "; bias fused, fast accumulation off: 3 algorithm(s), last status "
            "CUBLAS_STATUS_NOT_SUPPORTED");
  EXPECT_EQ(describe_failed_attempt({false, true}, 0, "x"),
            "; bias separate, fast accumulation on: 0 algorithm(s), last status x");

  LtPlan p;
  p.algo_id = 21;
  p.tile = 18;
  EXPECT_EQ(describe(p), "algo 21 tile 18");
  p.bias = true;
  EXPECT_EQ(describe(p), "algo 21 tile 18, bias separate");
  p.fused_bias = true;
  p.fast_accum = true;
  EXPECT_EQ(describe(p), "algo 21 tile 18, bias fused, fast accumulation");
  LtPlan unread;  // the algorithm's attributes could not be read
  EXPECT_EQ(describe(unread), "algo -1 tile -1");
}

TEST(GemmSpec, PickFastestTimesTwiceSecondPassReversed) {
  // Candidate 0 is slow on the first pass (a cold GPU) and fast on the second.
  std::map<size_t, std::vector<double>> times = {{0, {3.0, 1.0}}, {1, {2.0, 2.5}}, {2, {1.5, 1.8}}};
  std::vector<size_t> order;
  std::map<size_t, int> calls;
  const auto pick = pick_fastest(3, [&](size_t i) -> std::optional<double> {
    order.push_back(i);
    return times[i][size_t(calls[i]++)];
  });
  EXPECT_EQ(order, (std::vector<size_t>{0, 1, 2, 2, 1, 0}));
  ASSERT_TRUE(pick.has_value());
  EXPECT_EQ(pick->index, 0u);
  EXPECT_DOUBLE_EQ(pick->seconds, 1.0);
  EXPECT_EQ(pick->tried, 3);
}

TEST(GemmSpec, PickFastestSkipsWhatFailsAndKeepsTheFirstOfEqualTimes) {
  std::vector<size_t> order;
  int second_calls = 0;
  const auto pick = pick_fastest(4, [&](size_t i) -> std::optional<double> {
    order.push_back(i);
    if (i == 0) return std::nullopt;  // never launches
    if (i == 3) return ++second_calls == 1 ? std::optional<double>(1.0) : std::nullopt;
    return 1.0;
  });
  // 0 fails in the first pass and is not timed again; 3's failure in the second pass
  // keeps its first time.
  EXPECT_EQ(order, (std::vector<size_t>{0, 1, 2, 3, 3, 2, 1}));
  ASSERT_TRUE(pick.has_value());
  EXPECT_EQ(pick->index, 1u);
  EXPECT_EQ(pick->tried, 3);

  EXPECT_FALSE(pick_fastest(0, [](size_t) { return std::optional<double>(1.0); }).has_value());
  EXPECT_FALSE(pick_fastest(2, [](size_t) { return std::optional<double>(); }).has_value());
}

TEST(GemmSpec, ModelStorageTypesMapBothWays) {
  using models::DType;
  EXPECT_EQ(models::gemm_elem(DType::kF32), GemmElem::kF32);
  EXPECT_EQ(models::gemm_elem(DType::kF16), GemmElem::kF16);
  EXPECT_EQ(models::gemm_elem(DType::kBF16), GemmElem::kBF16);
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16})
    EXPECT_EQ(models::dtype_of(models::gemm_elem(t)), t);
}

}  // namespace
}  // namespace gpuvs
