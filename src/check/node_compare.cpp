// GEMM consistency across a node's GPUs. See node_compare.h.
#include "check/node_compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace gpuvs::check {

namespace {

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

std::vector<GemmNodeVerdict> judge_node(const std::vector<GemmRunFigures>& figures,
                                        double slow_fraction) {
  // Peers: same model and precision.
  std::map<std::pair<std::string, std::string>, std::vector<const GemmRunFigures*>> groups;
  for (const GemmRunFigures& f : figures)
    groups[{f.gpu_name, f.precision}].push_back(&f);

  std::vector<GemmNodeVerdict> out;
  for (const GemmRunFigures& f : figures) {
    const auto& peers = groups[{f.gpu_name, f.precision}];
    GemmNodeVerdict v;
    v.gpu = f.gpu;
    v.precision = f.precision;
    v.peers = static_cast<int>(peers.size());
    v.repeatable = !f.hashes.empty() && std::all_of(f.hashes.begin(), f.hashes.end(),
                                                    [&](uint64_t h) { return h == f.hashes[0]; });
    std::vector<double> rates;
    // The node's bits: the hash most peers gave first (a tie: the lowest GPU's).
    std::map<uint64_t, int> votes;
    for (const GemmRunFigures* p : peers) {
      rates.push_back(p->flops);
      if (!p->hashes.empty()) ++votes[p->hashes[0]];
    }
    v.median_flops = median_of(rates);
    uint64_t node_hash = peers.front()->hashes.empty() ? 0 : peers.front()->hashes[0];
    int best = 0;
    for (const GemmRunFigures* p : peers) {
      if (p->hashes.empty()) continue;
      if (votes[p->hashes[0]] > best) {
        best = votes[p->hashes[0]];
        node_hash = p->hashes[0];
      }
    }
    std::vector<std::string> why;
    if (!v.repeatable)
      why.push_back(
          fmt::format("{} GEMM gave different bits on repeated runs of the same "
                      "operands",
                      f.precision));
    if (peers.size() > 1 && (f.hashes.empty() || f.hashes[0] != node_hash)) {
      v.matches_node = false;
      why.push_back(fmt::format("{} GEMM bits differ from the other {} {}(s) of this node",
                                f.precision, peers.size() - 1, f.gpu_name));
    }
    if (peers.size() > 1 && f.flops < (1 - slow_fraction) * v.median_flops) {
      v.slow = true;
      why.push_back(
          fmt::format("{} GEMM {:.1f} TFLOP/s is {:.1f} % below the node's median "
                      "{:.1f} (limit {:.0f} %)",
                      f.precision, f.flops / 1e12, 100 * (1 - f.flops / v.median_flops),
                      v.median_flops / 1e12, 100 * slow_fraction));
    }
    for (size_t i = 0; i < why.size(); ++i)
      v.reason += (i ? "; " : "") + why[i];
    out.push_back(std::move(v));
  }
  return out;
}

}  // namespace gpuvs::check
