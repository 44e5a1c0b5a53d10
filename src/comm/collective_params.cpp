// The parameters of a collective result (collective_params.h).
#include "comm/collective_params.h"

#include <fmt/format.h>

#include "core/error.h"

namespace gpuvs::comm {

bool collective_reduces(std::string_view op) {
  return op == "all_reduce" || op == "reduce_scatter" || op == "reduce";
}

bool collective_has_root(std::string_view op) {
  return op == "broadcast" || op == "reduce";
}

double busbw_factor(std::string_view op, int ranks) {
  const double ring = static_cast<double>(ranks - 1) / ranks;
  if (op == "all_reduce") return 2 * ring;
  if (op == "all_gather" || op == "reduce_scatter" || op == "alltoall") return ring;
  if (op == "broadcast" || op == "reduce" || op == "sendrecv") return 1;
  throw Error(fmt::format("unknown collective '{}'", op));
}

std::map<std::string, ParamValue> collective_parameters(std::string_view op, int64_t bytes,
                                                        int ranks, const CollectiveLabels& labels) {
  std::map<std::string, ParamValue> p{{"bytes", bytes},
                                      {"ranks", int64_t{ranks}},
                                      {"dtype", labels.dtype},
                                      {"algo", labels.algo},
                                      {"proto", labels.proto},
                                      {"graph", labels.graph},
                                      {"busbw_factor", busbw_factor(op, ranks)},
                                      {"buffers", labels.buffers}};
  if (collective_reduces(op) && labels.redop) p["redop"] = *labels.redop;
  if (collective_has_root(op) && labels.root) p["root"] = *labels.root;
  return p;
}

}  // namespace gpuvs::comm
