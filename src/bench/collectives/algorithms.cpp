// The algorithm study (docs/collectives.md): every reducing and gathering collective
// under NCCL's own choice and under each NCCL_ALGO x NCCL_PROTO value, per size, so
// "set NCCL_ALGO=Tree" becomes a measurement instead of folklore. NCCL reads both
// variables when a communicator is created, so each variant gets its own
// communicator; a variant NCCL refuses is recorded as unsupported with NCCL's words.
// The user's own NCCL settings are kept for the default variant and restored after.
// Point-to-point ops (alltoall, sendrecv) do not go through NCCL's algorithms and are
// not studied.
#include <fmt/format.h>

#include <cstdlib>

#include "bench/collectives/nccl.h"
#include "comm/world.h"
#include "suite/produces.h"

namespace gpuvs {

namespace {

// Sets NCCL_ALGO/NCCL_PROTO for a scope and puts the user's values back after.
class EnvScope {
 public:
  EnvScope(const std::string& algo, const std::string& proto)
      : algo_(saved("NCCL_ALGO")), proto_(saved("NCCL_PROTO")) {
    if (algo != "default") ::setenv("NCCL_ALGO", algo.c_str(), 1);
    if (proto != "default") ::setenv("NCCL_PROTO", proto.c_str(), 1);
  }
  ~EnvScope() {
    restore("NCCL_ALGO", algo_);
    restore("NCCL_PROTO", proto_);
  }
  EnvScope(const EnvScope&) = delete;
  EnvScope& operator=(const EnvScope&) = delete;

 private:
  static std::optional<std::string> saved(const char* name) {
    const char* v = std::getenv(name);
    return v != nullptr ? std::optional<std::string>(v) : std::nullopt;
  }
  static void restore(const char* name, const std::optional<std::string>& v) {
    if (v) {
      ::setenv(name, v->c_str(), 1);
    } else {
      ::unsetenv(name);
    }
  }
  std::optional<std::string> algo_, proto_;
};

Result not_measured(const BenchContext& ctx, const std::string& op, const std::string& algo,
                    const std::string& proto, const std::string& why) {
  Result r;
  r.id = result_id(Family::kCollectiveBusbw, {op});
  r.name = fmt::format("{} bus bandwidth", op);
  if (ctx.world == nullptr) r.devices = ctx.devices;
  r.parameters = {{"algo", algo},
                  {"proto", proto},
                  {"ranks", int64_t{collective_ranks(ctx)}},
                  {"dtype", std::string("float32")},
                  {"graph", false}};
  r.status = Status::kUnsupported;
  r.status_reason = why;
  r.validation = "none";
  return r;
}

bool nvls_disabled() {
  const char* v = std::getenv("NCCL_NVLS_ENABLE");
  return v != nullptr && std::string_view(v) == "0";
}

}  // namespace

std::vector<Result> run_collective_study(BenchContext& ctx) {
  if (collective_ranks(ctx) < 2) {
    return {not_measured(ctx, "all_reduce", "default", "default",
                         "the algorithm study needs 2 or more GPUs; this process drives 1")};
  }
  comm::CollectiveOptions defaults;
  const comm::CollectiveOptions& o = ctx.collectives != nullptr ? *ctx.collectives : defaults;
  std::vector<std::string> ops;
  for (const std::string& op : comm::selected_ops(o))
    if (op != "alltoall" && op != "sendrecv") ops.push_back(op);
  // Unless sizes were given: every fourth power of two up to 1 GiB.
  comm::CollectiveOptions range = o;
  if (!o.sizes_given) {
    range.min_bytes = 8;
    range.max_bytes = int64_t{1} << 30;
    range.factor = 4;
  }
  const std::vector<int64_t> sizes = comm::collective_sizes(range);
  const auto all_algos = comm::nccl_algos();
  const auto all_protos = comm::nccl_protos();
  const std::vector<std::string> algos =
      o.algos.empty() ? std::vector<std::string>(all_algos.begin(), all_algos.end()) : o.algos;
  const std::vector<std::string> protos =
      o.protos.empty() ? std::vector<std::string>(all_protos.begin(), all_protos.end()) : o.protos;

  struct Variant {
    std::string algo, proto;
  };
  std::vector<Variant> variants = {{"default", "default"}};
  for (const auto& a : algos)
    for (const auto& p : protos)
      variants.push_back({a, p});

  std::vector<Result> out;
  try {
    for (const Variant& v : variants) {
      if (nvls_disabled() && v.algo.starts_with("NVLS")) {
        for (const std::string& op : ops)
          out.push_back(not_measured(ctx, op, v.algo, v.proto,
                                     "not tried: NCCL_NVLS_ENABLE=0 in the environment"));
        continue;
      }
      EnvScope env(v.algo, v.proto);
      std::unique_ptr<comm::NcclGroup> group;
      for (const std::string& op : ops) {
        try {
          if (!group) {
            group = make_group(ctx, o.timeout_s);
            record_comm(ctx, *group);
          }
          CollectiveSweep sweep = base_sweep(ctx, *group);
          sweep.algo = v.algo;
          sweep.proto = v.proto;
          sweep.graph = comm::GraphMode::kOff;
          sweep.options = quick_options();
          sweep.options.time_cap_s = 0.3;
          measure_op(sweep, op, sizes, out);
        } catch (comm::CollectiveAbort& e) {
          if (!e.nccl_refused()) throw;
          // NCCL said no to this setting for this op: record it, start afresh.
          for (Result& r : e.partial)
            out.push_back(std::move(r));
          out.push_back(not_measured(ctx, op, v.algo, v.proto,
                                     fmt::format("NCCL refused NCCL_ALGO={} NCCL_PROTO={}: {}",
                                                 v.algo, v.proto, e.what())));
          group.reset();
        }
      }
    }
  } catch (comm::CollectiveAbort& e) {
    e.partial.insert(e.partial.begin(), std::make_move_iterator(out.begin()),
                     std::make_move_iterator(out.end()));
    throw;
  }
  return out;
}

GPUVS_BENCHMARK(run_collective_study, "collectives.algorithms");

}  // namespace gpuvs
