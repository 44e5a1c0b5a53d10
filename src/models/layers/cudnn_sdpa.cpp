// cudnn_sdpa.h: the forward and backward operation graphs, their plans, their execution.
// The graphs follow the pattern cuDNN's documentation gives for its fused attention
// (the "Fused Flash Attention" support surface of the graph API, as cuDNN's frontend
// composes its sdpa and sdpa_backward nodes); a graph cuDNN does not recognise gets no
// fused engine, and SdpaUnsupported says so.
#include "models/layers/cudnn_sdpa.h"

#include <cudnn.h>
#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

#include "gpu/check.h"
#include "models/layers/cudnn.h"

namespace gpuvs::models {

namespace {

std::string last_error() {
  char msg[1024] = {0};
  cudnnGetLastErrorString(msg, sizeof msg);
  return msg;
}

void check(cudnnStatus_t status, const char* what) {
  if (status == CUDNN_STATUS_SUCCESS) return;
  if (status == CUDNN_STATUS_ALLOC_FAILED)
    throw OutOfMemoryError(fmt::format("cuDNN SDPA: {}: out of memory", what));
  const std::string detail = last_error();
  throw Error(fmt::format("cuDNN SDPA: {}: {}{}{}", what, cudnnGetErrorString(status),
                          detail.empty() ? "" : ": ", detail));
}

// One backend descriptor, destroyed with its owner (none where default-constructed).
class Desc {
 public:
  Desc() = default;
  explicit Desc(cudnnBackendDescriptorType_t type) {
    check(cudnnBackendCreateDescriptor(type, &d_), "creating a descriptor");
  }
  ~Desc() {
    if (d_) cudnnBackendDestroyDescriptor(d_);
  }
  Desc(Desc&& o) noexcept : d_(std::exchange(o.d_, nullptr)) {}
  Desc& operator=(Desc&& o) noexcept {
    std::swap(d_, o.d_);
    return *this;
  }
  Desc(const Desc&) = delete;
  Desc& operator=(const Desc&) = delete;

  cudnnBackendDescriptor_t get() const { return d_; }
  void set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t count,
           const void* values) {
    check(cudnnBackendSetAttribute(d_, name, type, count, values), "setting an attribute");
  }
  void set_desc(cudnnBackendAttributeName_t name, const Desc& other) {
    cudnnBackendDescriptor_t p = other.get();
    set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &p);
  }
  void finalize(const char* what) { check(cudnnBackendFinalize(d_), what); }

 private:
  cudnnBackendDescriptor_t d_ = nullptr;
};

using Dims = std::vector<int64_t>;

Dims contiguous(const Dims& dims) {
  Dims s(dims.size(), 1);
  for (size_t i = dims.size() - 1; i > 0; --i)
    s[i - 1] = s[i] * dims[i];
  return s;
}

// An operation graph under construction: its tensors (by unique id) and operations.
class GraphBuilder {
 public:
  // A tensor the caller binds (virtual false) or one that lives only inside the fused
  // kernel; by_value: a host scalar read at execution.
  int64_t tensor(const Dims& dims, const Dims& strides, cudnnDataType_t type, bool is_virtual,
                 bool by_value = false) {
    const int64_t uid = int64_t(tensors_.size()) + 1;
    Desc t(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    t.set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type);
    t.set(CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, int64_t(dims.size()), dims.data());
    t.set(CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, int64_t(strides.size()), strides.data());
    t.set(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
    const int64_t alignment = 16;
    t.set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment);
    t.set(CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &is_virtual);
    if (by_value) t.set(CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &by_value);
    t.finalize("a tensor descriptor");
    tensors_.push_back(std::move(t));
    return uid;
  }
  int64_t virt(const Dims& dims, cudnnDataType_t type = CUDNN_DATA_FLOAT) {
    return tensor(dims, contiguous(dims), type, true);
  }
  int64_t scalar() { return tensor({1, 1, 1, 1}, {1, 1, 1, 1}, CUDNN_DATA_FLOAT, false, true); }

  // y = mode(x[, b[, t]]); b, t 0 where the mode takes fewer inputs; axis for GEN_INDEX.
  void pointwise(cudnnPointwiseMode_t mode, int64_t x, int64_t b, int64_t t, int64_t y,
                 cudnnDataType_t math = CUDNN_DATA_FLOAT, int64_t axis = -1) {
    Desc pw(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
    pw.set(CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode);
    pw.set(CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &math);
    if (axis >= 0) pw.set(CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &axis);
    pw.finalize("a pointwise descriptor");
    Desc op(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
    op.set_desc(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pw);
    op.set_desc(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, at(x));
    if (b) op.set_desc(CUDNN_ATTR_OPERATION_POINTWISE_BDESC, at(b));
    if (t) op.set_desc(CUDNN_ATTR_OPERATION_POINTWISE_TDESC, at(t));
    op.set_desc(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, at(y));
    const float one = 1.0f;
    op.set(CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1, CUDNN_TYPE_FLOAT, 1, &one);
    op.set(CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2, CUDNN_TYPE_FLOAT, 1, &one);
    op.finalize("a pointwise operation");
    keep(std::move(pw));
    ops_.push_back(std::move(op));
  }
  // A new virtual output of `dims` and `type`.
  int64_t pointwise(cudnnPointwiseMode_t mode, int64_t x, int64_t b, const Dims& dims,
                    cudnnDataType_t type = CUDNN_DATA_FLOAT) {
    const int64_t y = virt(dims, type);
    pointwise(mode, x, b, 0, y);
    return y;
  }

  // y = the reduction of x over the dimensions where y has 1 (or fewer heads).
  void reduction(cudnnReduceTensorOp_t which, int64_t x, int64_t y) {
    Desc r(CUDNN_BACKEND_REDUCTION_DESCRIPTOR);
    r.set(CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &which);
    const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
    r.set(CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f32);
    r.finalize("a reduction descriptor");
    Desc op(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR);
    op.set_desc(CUDNN_ATTR_OPERATION_REDUCTION_XDESC, at(x));
    op.set_desc(CUDNN_ATTR_OPERATION_REDUCTION_YDESC, at(y));
    op.set_desc(CUDNN_ATTR_OPERATION_REDUCTION_DESC, r);
    op.finalize("a reduction operation");
    keep(std::move(r));
    ops_.push_back(std::move(op));
  }

  // c = a b, batched over the leading dimensions, FP32 accumulation.
  void matmul(int64_t a, int64_t b, int64_t c) {
    Desc m(CUDNN_BACKEND_MATMUL_DESCRIPTOR);
    const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
    m.set(CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f32);
    m.finalize("a matmul descriptor");
    Desc op(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
    op.set_desc(CUDNN_ATTR_OPERATION_MATMUL_ADESC, at(a));
    op.set_desc(CUDNN_ATTR_OPERATION_MATMUL_BDESC, at(b));
    op.set_desc(CUDNN_ATTR_OPERATION_MATMUL_CDESC, at(c));
    op.set_desc(CUDNN_ATTR_OPERATION_MATMUL_DESC, m);
    op.finalize("a matmul operation");
    keep(std::move(m));
    ops_.push_back(std::move(op));
  }

  // y: x's elements under y's dimensions and strides (a transposed view).
  void reshape(int64_t x, int64_t y) {
    Desc op(CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR);
    op.set_desc(CUDNN_ATTR_OPERATION_RESHAPE_XDESC, at(x));
    op.set_desc(CUDNN_ATTR_OPERATION_RESHAPE_YDESC, at(y));
    op.finalize("a reshape operation");
    ops_.push_back(std::move(op));
  }

  Desc finish(cudnnHandle_t handle) {
    Desc g(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    std::vector<cudnnBackendDescriptor_t> raw;
    for (const Desc& op : ops_)
      raw.push_back(op.get());
    g.set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, int64_t(raw.size()),
          raw.data());
    g.set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
    g.finalize("the operation graph");
    return g;
  }

 private:
  const Desc& at(int64_t uid) const { return tensors_.at(size_t(uid - 1)); }
  void keep(Desc d) { kept_.push_back(std::move(d)); }

  std::vector<Desc> tensors_, ops_, kept_;
};

// The causal mask over scores s (B, H, T, T): s where row >= column, else -inf.
int64_t causal_mask(GraphBuilder& g, int64_t s, const Dims& dims, int64_t neg_inf) {
  const int64_t row = g.virt(dims, CUDNN_DATA_INT32), col = g.virt(dims, CUDNN_DATA_INT32);
  g.pointwise(CUDNN_POINTWISE_GEN_INDEX, s, 0, 0, row, CUDNN_DATA_FLOAT, 2);
  g.pointwise(CUDNN_POINTWISE_GEN_INDEX, s, 0, 0, col, CUDNN_DATA_FLOAT, 3);
  const int64_t keep = g.virt(dims, CUDNN_DATA_BOOLEAN);
  g.pointwise(CUDNN_POINTWISE_CMP_GE, row, col, 0, keep, CUDNN_DATA_BOOLEAN);
  const int64_t out = g.virt(dims);
  g.pointwise(CUDNN_POINTWISE_BINARY_SELECT, s, neg_inf, keep, out);
  return out;
}

// An execution plan with what it was built from (its graph and engine configuration,
// kept alive with it), its workspace and the engine's global index.
struct Plan {
  std::unique_ptr<GraphBuilder> graph_ops;
  Desc graph, config, plan;
  int64_t workspace = 0;
  int64_t engine = -1;
};

// The plan of the first engine configuration cuDNN's heuristics rank for the graph that
// builds one.
Plan build_plan(cudnnHandle_t handle, std::unique_ptr<GraphBuilder> ops, const char* pass) {
  Desc graph = ops->finish(handle);
  Desc heur(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  heur.set_desc(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph);
  const cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
  heur.set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
  heur.finalize("the engine heuristics");
  int64_t count = 0;
  check(cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                 CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr),
        "counting the heuristics' engines");
  std::vector<Desc> configs;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (int64_t i = 0; i < count; ++i) {
    configs.emplace_back(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    raw.push_back(configs.back().get());
  }
  int64_t got = 0;
  if (count > 0)
    check(cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                   CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &got, raw.data()),
          "reading the heuristics' engines");
  std::string why = "no engine offered";
  for (int64_t i = 0; i < got; ++i) {
    Plan p;
    p.plan = Desc(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
    p.plan.set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
    p.plan.set_desc(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, configs[size_t(i)]);
    const cudnnStatus_t st = cudnnBackendFinalize(p.plan.get());
    if (st == CUDNN_STATUS_ALLOC_FAILED) check(st, "building a plan");
    if (st != CUDNN_STATUS_SUCCESS) {
      why = fmt::format("{} engine(s) refused: {} {}", got, cudnnGetErrorString(st), last_error());
      continue;
    }
    int64_t n = 0;
    check(cudnnBackendGetAttribute(p.plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                   CUDNN_TYPE_INT64, 1, &n, &p.workspace),
          "reading a plan's workspace");
    Desc engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
    cudnnBackendDescriptor_t e = engine.get();
    if (cudnnBackendGetAttribute(configs[size_t(i)].get(), CUDNN_ATTR_ENGINECFG_ENGINE,
                                 CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &e) == CUDNN_STATUS_SUCCESS)
      cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n,
                               &p.engine);
    p.config = std::move(configs[size_t(i)]);
    p.graph = std::move(graph);
    p.graph_ops = std::move(ops);
    return p;
  }
  throw SdpaUnsupported(fmt::format("cuDNN {} has no fused attention {} for this shape ({})",
                                    cudnnGetVersion(), pass, why));
}

size_t align256(size_t n) {
  return (n + 255) / 256 * 256;
}

// Variant-pack ids of the tensors the caller binds (GraphBuilder numbers tensors from 1
// in creation order; the builders below create these first, in this order).
enum Fwd : int64_t { kFq = 1, kFk, kFv, kFo, kFstats, kFscale, kFneg };
enum Bwd : int64_t {
  kBq = 1,
  kBk,
  kBv,
  kBo,
  kBdo,
  kBstats,
  kBdq,
  kBdk,
  kBdv,
  kBsum,
  kBdqacc,
  kBscale,
  kBneg,
  kBone
};

}  // namespace

struct CudnnSdpa::Plans {
  CudnnHandle handle;
  Plan fwd, bwd;
  bool has_bwd = false;
  // Before 9.6 the FP32 dq accumulator had to start at zero (cuDNN's frontend clears it
  // there); later engines initialise it themselves.
  bool clear_dq = false;
  size_t bwd_sum_at = 0, bwd_dq_at = 0, dq_bytes = 0;  // in the workspace
  float scale = 0, neg_inf = 0, one = 1.0f;

  void execute(const Plan& p, const std::vector<int64_t>& uids, std::vector<void*> ptrs,
               void* workspace, cudaStream_t stream) {
    Desc pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
    pack.set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, int64_t(uids.size()),
             uids.data());
    pack.set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, int64_t(ptrs.size()),
             ptrs.data());
    pack.set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace);
    pack.finalize("the variant pack");
    check(cudnnSetStream(handle.get(), stream), "setting the stream");
    check(cudnnBackendExecute(handle.get(), p.plan.get(), pack.get()), "executing");
  }
};

CudnnSdpa::CudnnSdpa(const SdpaShape& s, bool training) : shape_(s), plans_(new Plans) {
  if (s.batch < 1 || s.heads < 1 || s.kv_heads < 1 || s.heads % s.kv_heads != 0 || s.seq < 1 ||
      s.head_dim < 1)
    throw Error(fmt::format("cuDNN SDPA: invalid shape B{} H{} G{} T{} D{}", s.batch, s.heads,
                            s.kv_heads, s.seq, s.head_dim));
  if (!s.causal) throw SdpaUnsupported("cuDNN SDPA: only the causal graph is built");
  Plans& P = *plans_;
  P.scale = s.scale;
  // cuDNN before 9.10 takes the lowest float for the mask, later ones -inf (as its
  // frontend does).
  P.neg_inf = cudnnGetVersion() < 91000 ? std::numeric_limits<float>::lowest()
                                        : -std::numeric_limits<float>::infinity();

  const int64_t b = s.batch, h = s.heads, g = s.kv_heads, t = s.seq, d = s.head_dim;
  const Dims qd{b, h, t, d}, qs = contiguous(qd);
  const Dims os = s.o_tokens ? Dims{t * h * d, d, h * d, 1} : qs;
  const Dims kvd{b, g, t, d}, kvs = contiguous(kvd);
  const Dims kt_d{b, g, d, t}, kt_s{g * t * d, t * d, 1, d};  // k and v transposed (views)
  const Dims sd{b, h, t, t}, rd{b, h, t, 1}, rs = contiguous(rd);
  const cudnnDataType_t bf16 = CUDNN_DATA_BFLOAT16, f32 = CUDNN_DATA_FLOAT;

  {
    auto fgp = std::make_unique<GraphBuilder>();
    GraphBuilder& fg = *fgp;
    fg.tensor(qd, qs, bf16, false);      // kFq
    fg.tensor(kt_d, kt_s, bf16, false);  // kFk, as k^T
    fg.tensor(kvd, kvs, bf16, false);    // kFv
    fg.tensor(qd, os, bf16, false);      // kFo
    fg.tensor(rd, rs, f32, false);       // kFstats
    fg.scalar();                         // kFscale
    fg.scalar();                         // kFneg
    const int64_t scores = fg.virt(sd);
    fg.matmul(kFq, kFk, scores);
    const int64_t scaled = fg.pointwise(CUDNN_POINTWISE_MUL, scores, kFscale, sd);
    const int64_t masked = causal_mask(fg, scaled, sd, kFneg);
    const int64_t max = fg.virt(rd);
    fg.reduction(CUDNN_REDUCE_TENSOR_MAX, masked, max);
    const int64_t shifted = fg.pointwise(CUDNN_POINTWISE_SUB, masked, max, sd);
    const int64_t e = fg.pointwise(CUDNN_POINTWISE_EXP, shifted, 0, sd);
    const int64_t sum = fg.virt(rd);
    fg.reduction(CUDNN_REDUCE_TENSOR_ADD, e, sum);
    const int64_t log_sum = fg.pointwise(CUDNN_POINTWISE_LOG, sum, 0, rd);
    fg.pointwise(CUDNN_POINTWISE_ADD, log_sum, max, 0, kFstats);
    const int64_t p = fg.pointwise(CUDNN_POINTWISE_DIV, e, sum, sd, bf16);
    fg.matmul(p, kFv, kFo);
    P.fwd = build_plan(P.handle.get(), std::move(fgp), "forward");
  }
  workspace_bytes_ = size_t(P.fwd.workspace);
  if (!training) return;

  {
    auto bgp = std::make_unique<GraphBuilder>();
    GraphBuilder& bg = *bgp;
    bg.tensor(qd, qs, bf16, false);      // kBq
    bg.tensor(kt_d, kt_s, bf16, false);  // kBk, as k^T
    bg.tensor(kt_d, kt_s, bf16, false);  // kBv, as v^T
    bg.tensor(qd, os, bf16, false);      // kBo
    bg.tensor(qd, os, bf16, false);      // kBdo
    bg.tensor(rd, rs, f32, false);       // kBstats
    bg.tensor(qd, qs, bf16, false);      // kBdq
    bg.tensor(kvd, kvs, bf16, false);    // kBdk
    bg.tensor(kvd, kvs, bf16, false);    // kBdv
    bg.tensor(rd, rs, f32, false);       // kBsum: rowsum(d_o o), in the workspace
    bg.tensor(qd, qs, f32, false);       // kBdqacc: dq in FP32, in the workspace
    bg.scalar();                         // kBscale
    bg.scalar();                         // kBneg
    bg.scalar();                         // kBone
    // delta = rowsum(d_o o)
    const int64_t prod = bg.pointwise(CUDNN_POINTWISE_MUL, kBdo, kBo, qd);
    const int64_t rowsum = bg.virt(rd);
    bg.reduction(CUDNN_REDUCE_TENSOR_ADD, prod, rowsum);
    bg.pointwise(CUDNN_POINTWISE_MUL, rowsum, kBone, 0, kBsum);
    // P = exp(scale q k^T - stats), masked
    const int64_t scores = bg.virt(sd);
    bg.matmul(kBq, kBk, scores);
    const int64_t scaled = bg.pointwise(CUDNN_POINTWISE_MUL, scores, kBscale, sd);
    const int64_t centred = bg.pointwise(CUDNN_POINTWISE_SUB, scaled, kBstats, sd);
    const int64_t masked = causal_mask(bg, centred, sd, kBneg);
    const int64_t p = bg.pointwise(CUDNN_POINTWISE_EXP, masked, 0, sd);
    const Dims st{h * t * t, t * t, 1, t};  // (B, H, T, T) transposed
    // dv = P^T d_o, summed over each group's query heads
    const int64_t pt = bg.tensor(sd, st, bf16, true);
    bg.reshape(p, pt);
    if (h == g) {
      bg.matmul(pt, kBdo, kBdv);
    } else {
      const int64_t dv_full = bg.virt(qd, bf16);
      bg.matmul(pt, kBdo, dv_full);
      bg.reduction(CUDNN_REDUCE_TENSOR_ADD, dv_full, kBdv);
    }
    // dS = scale P (d_o v^T - delta)
    const int64_t dp = bg.virt(sd);
    bg.matmul(kBdo, kBv, dp);
    const int64_t dp_c = bg.pointwise(CUDNN_POINTWISE_SUB, dp, kBsum, sd);
    const int64_t ds0 = bg.pointwise(CUDNN_POINTWISE_MUL, dp_c, p, sd);
    const int64_t ds = bg.pointwise(CUDNN_POINTWISE_MUL, ds0, kBscale, sd);
    // dk = dS^T q, summed over the group
    const int64_t dst = bg.tensor(sd, st, bf16, true);
    bg.reshape(ds, dst);
    if (h == g) {
      bg.matmul(dst, kBq, kBdk);
    } else {
      const int64_t dk_full = bg.virt(qd, bf16);
      bg.matmul(dst, kBq, dk_full);
      bg.reduction(CUDNN_REDUCE_TENSOR_ADD, dk_full, kBdk);
    }
    // dq = dS k, accumulated in FP32, then rounded
    const int64_t k = bg.tensor(kvd, kvs, bf16, true);
    bg.reshape(kBk, k);
    bg.matmul(ds, k, kBdqacc);
    bg.pointwise(CUDNN_POINTWISE_IDENTITY, kBdqacc, 0, 0, kBdq);
    P.bwd = build_plan(P.handle.get(), std::move(bgp), "backward");
  }
  P.has_bwd = true;
  P.clear_dq = cudnnGetVersion() < 90600;
  P.bwd_sum_at = align256(size_t(P.bwd.workspace));
  P.bwd_dq_at = P.bwd_sum_at + align256(size_t(b * h * t) * 4);
  P.dq_bytes = size_t(b * h * t * d) * 4;
  workspace_bytes_ = std::max(workspace_bytes_, P.bwd_dq_at + P.dq_bytes);
}

CudnnSdpa::~CudnnSdpa() = default;

std::string CudnnSdpa::describe() const {
  const size_t v = cudnnGetVersion();
  std::string s = fmt::format("cuDNN {}.{}.{} SDPA (engine {}", v / 10000, v / 100 % 100, v % 100,
                              plans_->fwd.engine);
  if (plans_->has_bwd) s += fmt::format(", backward engine {}", plans_->bwd.engine);
  return s + ")";
}

void CudnnSdpa::forward(const void* q, const void* k, const void* v, void* o, float* stats,
                        void* workspace, cudaStream_t stream) {
  Plans& P = *plans_;
  P.execute(P.fwd, {kFq, kFk, kFv, kFo, kFstats, kFscale, kFneg},
            {const_cast<void*>(q), const_cast<void*>(k), const_cast<void*>(v), o, stats, &P.scale,
             &P.neg_inf},
            workspace, stream);
}

void CudnnSdpa::backward(const void* q, const void* k, const void* v, const void* o,
                         const void* d_o, const float* stats, void* dq, void* dk, void* dv,
                         void* workspace, cudaStream_t stream) {
  Plans& P = *plans_;
  if (!P.has_bwd) throw Error("cuDNN SDPA: built for inference: no backward plan");
  char* ws = static_cast<char*>(workspace);
  if (P.clear_dq) GPUVS_CUDA_CHECK(cudaMemsetAsync(ws + P.bwd_dq_at, 0, P.dq_bytes, stream));
  P.execute(
      P.bwd,
      {kBq, kBk, kBv, kBo, kBdo, kBstats, kBdq, kBdk, kBdv, kBsum, kBdqacc, kBscale, kBneg, kBone},
      {const_cast<void*>(q), const_cast<void*>(k), const_cast<void*>(v), const_cast<void*>(o),
       const_cast<void*>(d_o), const_cast<float*>(stats), dq, dk, dv, ws + P.bwd_sum_at,
       ws + P.bwd_dq_at, &P.scale, &P.neg_inf, &P.one},
      workspace, stream);
}

}  // namespace gpuvs::models
