// The datasheet catalogue, the metric vocabulary and the published figures: the
// built-in files load, hold the figures the project's checks rely on, and every
// lookup (name, alias, driver identity) behaves as documented.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "core/error.h"
#include "core/suggest.h"
#include "specs/catalogue.h"
#include "specs/metrics.h"
#include "specs/published.h"

namespace gpuvs {
namespace {

double figure(const GpuSpec& g, const std::string& metric) {
  const auto it = g.figures.find(metric);
  if (it == g.figures.end()) {
    ADD_FAILURE() << g.id << " lacks " << metric;
    return 0;
  }
  return it->second.value;
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.rfind(prefix, 0) == 0;
}

std::string fmt_hex(uint32_t id) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%04x", id);
  return buf;
}

TEST(Metrics, VocabularyIsCompleteOrderedAndUnique) {
  const std::vector<std::string> expected = {"memory.size",
                                             "memory.bandwidth",
                                             "compute.fp64",
                                             "compute.fp64_tensor",
                                             "compute.fp32",
                                             "compute.tf32",
                                             "compute.fp16",
                                             "compute.bf16",
                                             "compute.fp8",
                                             "compute.int8",
                                             "compute.tf32_sparse",
                                             "compute.fp16_sparse",
                                             "compute.bf16_sparse",
                                             "compute.fp8_sparse",
                                             "compute.int8_sparse",
                                             "link.nvlink",
                                             "link.peer_latency",
                                             "link.pcie",
                                             "link.host_h2d",
                                             "link.host_d2h",
                                             "collective.all_reduce_busbw",
                                             "collective.all_reduce_latency",
                                             "launch.latency",
                                             "launch.rate",
                                             "launch.graph_node",
                                             "launch.chain_stream",
                                             "launch.chain_graph",
                                             "power.tdp",
                                             "gpu.sm_count",
                                             "gpu.cuda_cores",
                                             "clock.boost"};
  std::vector<std::string> ids;
  std::vector<std::string> imported;  // of other tools' tests (gpuvs import), in place
  std::set<std::string> unique;
  for (const MetricDef& m : metrics()) {
    if (m.id.starts_with("nvbandwidth.") || m.id.starts_with("nvbench."))
      imported.push_back(ids.empty() ? "" : ids.back());
    else if (m.group != MetricGroup::kModels)
      ids.emplace_back(m.id);
    EXPECT_TRUE(unique.insert(m.id).second) << m.id;
    EXPECT_FALSE(m.name.empty()) << m.id;
    EXPECT_FALSE(m.unit.empty()) << m.id;
  }
  EXPECT_EQ(ids, expected);
  // nvbandwidth's tests after gpuvs's links, nvbench's benchmarks last of all.
  ASSERT_EQ(imported.size(), 33u);
  EXPECT_EQ(imported.front(), "link.host_d2h");
  EXPECT_EQ(metrics().back().id, "nvbench.bandwidth");
  EXPECT_EQ(metrics().back().group, MetricGroup::kKernels);
  // Models: per model and mode, throughput first, then its other figures, one row per
  // configuration (precision, batch, sequence ...).
  for (const char* id : {"model.resnet50.train", "model.resnet50.infer", "model.bert-large.train",
                         "model.bert-large.infer", "model.resnet50.train.step_time",
                         "model.bert-large.infer.tokens", "model.bert-large.train.energy_per_item",
                         "model.resnet50.infer.peak_memory", "model.resnet50.train.max_batch"}) {
    const MetricDef* m = find_metric(id);
    ASSERT_NE(m, nullptr) << id;
    EXPECT_EQ(m->group, MetricGroup::kModels) << id;
    EXPECT_EQ(m->result_ids.size(), 5u) << id;  // one per precision
    EXPECT_EQ(m->config.front(), "precision") << id;
  }
  EXPECT_EQ(find_metric("model.resnet50.train.tokens"), nullptr);  // images have no tokens
  EXPECT_EQ(find_metric("model.bert-large.train.energy_per_item")->unit, "J/seq");
  EXPECT_FALSE(find_metric("model.bert-large.train.step_time")->higher_is_better);
  // Files written before the table spelled the model "bert-large" still name it.
  EXPECT_EQ(find_metric("model.bert_large.train"), find_metric("model.bert-large.train"));
  EXPECT_EQ(find_metric("compute.int8")->unit, "OP/s");
  EXPECT_EQ(find_metric("compute.int8_sparse")->unit, "OP/s");
  EXPECT_EQ(find_metric("compute.fp16")->unit, "FLOP/s");
  EXPECT_EQ(find_metric("model.bert-large.infer")->unit, "seq/s");
  EXPECT_FALSE(find_metric("power.tdp")->higher_is_better);
  EXPECT_TRUE(find_metric("memory.bandwidth")->higher_is_better);
  EXPECT_EQ(find_metric("compute.fp17"), nullptr);
}

TEST(Metrics, ResultIdsMapToTheirMetric) {
  const MetricDef* m = metric_for_result("memory.hbm.copy");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->id, "memory.bandwidth");
  EXPECT_EQ(metric_for_result("memory.hbm.nonexistent"), nullptr);
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"compute.fma.fp64", "compute.fp64"},
      {"compute.fma.fp32", "compute.fp32"},
      {"compute.gemm.fp64.best", "compute.fp64_tensor"},
      {"compute.gemm.tf32", "compute.tf32"},
      {"compute.gemm.fp16.best", "compute.fp16"},
      {"compute.gemm.bf16", "compute.bf16"},
      {"compute.gemm.fp8_e4m3.best", "compute.fp8"},
      {"compute.gemm.int8.best", "compute.int8"},
      {"peer.ce.bidirectional", "link.nvlink"}};
  for (const auto& [result, metric] : expected) {
    const MetricDef* d = metric_for_result(result);
    ASSERT_NE(d, nullptr) << result;
    EXPECT_EQ(d->id, metric) << result;
  }
  // The sustained (power-capped) GEMM figure is not a peak's figure; a sweep's figure
  // is the point at one size (the largest both columns measured).
  EXPECT_EQ(metric_for_result("compute.gemm.bf16.sustained"), nullptr);
  EXPECT_EQ(metric_for_result("host.h2d.pinned")->id, "link.host_h2d");
  EXPECT_EQ(metric_for_result("host.h2d.pinned")->pick, Pick::kLargest);
  EXPECT_EQ(metric_for_result("collective.all_reduce.time")->pick, Pick::kSmallest);
  EXPECT_EQ(metric_for_result("collective.all_reduce.busbw")->config,
            std::vector<std::string>{"ranks"});
  EXPECT_EQ(metric_for_result("model.bert-large.infer.bf16")->id, "model.bert-large.infer");
  EXPECT_EQ(metric_for_result("model.resnet50.train.fp32.step_time")->id,
            "model.resnet50.train.step_time");
  // Every result id belongs to one metric only; the best shape comes first.
  std::set<std::string_view> seen;
  for (const MetricDef& def : metrics())
    for (std::string_view id : def.result_ids)
      EXPECT_TRUE(seen.insert(id).second) << id;
  EXPECT_EQ(find_metric("compute.bf16")->result_ids.front(), "compute.gemm.bf16.best");
  EXPECT_EQ(find_metric("model.resnet50.train")->result_ids.front(), "model.resnet50.train.fp32");
}

TEST(Metrics, ToBaseUnitConvertsReadableUnits) {
  EXPECT_DOUBLE_EQ(*to_base_unit(989, "TFLOP/s", "FLOP/s"), 989e12);
  EXPECT_DOUBLE_EQ(*to_base_unit(989, "TFLOPS", "FLOP/s"), 989e12);
  EXPECT_DOUBLE_EQ(*to_base_unit(2.25, "PFLOP/s", "FLOP/s"), 2.25e15);
  EXPECT_DOUBLE_EQ(*to_base_unit(4.8, "TB/s", "B/s"), 4.8e12);
  EXPECT_DOUBLE_EQ(*to_base_unit(2039, "GB/s", "B/s"), 2039e9);
  EXPECT_DOUBLE_EQ(*to_base_unit(141, "GB", "B"), 141e9);
  EXPECT_DOUBLE_EQ(*to_base_unit(80, "GiB", "B"), 80.0 * 1024 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(*to_base_unit(700, "W", "W"), 700);
  EXPECT_DOUBLE_EQ(*to_base_unit(1980, "MHz", "Hz"), 1980e6);
  EXPECT_DOUBLE_EQ(*to_base_unit(1.41, "GHz", "Hz"), 1.41e9);
  EXPECT_DOUBLE_EQ(*to_base_unit(2470, "img/s", "img/s"), 2470);
  EXPECT_DOUBLE_EQ(*to_base_unit(580, "seq/s", "seq/s"), 580);
  EXPECT_DOUBLE_EQ(*to_base_unit(580, "samples/s", "seq/s"), 580);
  EXPECT_DOUBLE_EQ(*to_base_unit(132, "1", "1"), 132);
  EXPECT_DOUBLE_EQ(*to_base_unit(132, "", "1"), 132);
  // INT8: operations, written as TOPS, TOP/s, or (by articles) TFLOP/s.
  EXPECT_DOUBLE_EQ(*to_base_unit(624, "TOPS", "OP/s"), 624e12);
  EXPECT_DOUBLE_EQ(*to_base_unit(624, "TOP/s", "OP/s"), 624e12);
  EXPECT_DOUBLE_EQ(*to_base_unit(3958, "TFLOP/s", "OP/s"), 3958e12);
  EXPECT_DOUBLE_EQ(*to_base_unit(9, "POPS", "OP/s"), 9e15);
  EXPECT_DOUBLE_EQ(*to_base_unit(3, " TB/s ", "B/s"), 3e12);
}

TEST(Metrics, ToBaseUnitRefusesUnitsThatDoNotFit) {
  EXPECT_FALSE(to_base_unit(1, "GB/s", "FLOP/s"));
  EXPECT_FALSE(to_base_unit(1, "TOPS", "FLOP/s"));  // FLOP/s metrics do not take OP/s
  EXPECT_FALSE(to_base_unit(1, "GB", "B/s"));
  EXPECT_FALSE(to_base_unit(1, "Gb", "B"));  // bits are not bytes
  EXPECT_FALSE(to_base_unit(1, "GiB/s", "B/s"));
  EXPECT_FALSE(to_base_unit(1, "kimg/s", "img/s"));
  EXPECT_FALSE(to_base_unit(1, "tflop/s", "FLOP/s"));
  EXPECT_FALSE(to_base_unit(1, "W", "Hz"));
  EXPECT_FALSE(to_base_unit(1, "TFLOP/s", "furlongs"));
  EXPECT_FALSE(to_base_unit(1, "x", "1"));
}

TEST(Catalogue, BuiltinLoadsWithEveryRequiredGpu) {
  const Catalogue& c = Catalogue::builtin();
  for (const char* id : {"V100-SXM2-32GB", "A100-PCIe-40GB", "A100-SXM4-40GB", "A100-PCIe-80GB",
                         "A100-SXM4-80GB", "H100-PCIe", "H100-SXM", "H100-NVL", "H200-SXM",
                         "H200-NVL", "GH200-96GB", "GH200-144GB", "B200", "L40S", "L4"}) {
    const GpuSpec* g = c.find(id);
    ASSERT_NE(g, nullptr) << id;
    EXPECT_EQ(g->id, id);
    EXPECT_FALSE(g->name.empty()) << id;
    EXPECT_FALSE(g->architecture.empty()) << id;
    EXPECT_FALSE(g->driver_names.empty()) << id;
    EXPECT_FALSE(g->pci_device_ids.empty()) << id;
    EXPECT_TRUE(g->figures.count("memory.size")) << id;
    EXPECT_TRUE(g->figures.count("memory.bandwidth")) << id;
  }
  EXPECT_EQ(&Catalogue::builtin(), &c) << "parsed once";
}

TEST(Catalogue, DoneWhenFiguresAreExact) {
  const Catalogue& c = Catalogue::builtin();
  const GpuSpec& a100 = c.get("A100-SXM4-80GB");
  const GpuSpec& h200 = c.get("H200-SXM");
  EXPECT_DOUBLE_EQ(figure(a100, "compute.fp16"), 312e12);
  EXPECT_DOUBLE_EQ(figure(a100, "memory.bandwidth"), 2039e9);
  EXPECT_DOUBLE_EQ(figure(a100, "memory.size"), 80e9);
  EXPECT_DOUBLE_EQ(figure(h200, "compute.fp16"), 989e12);
  EXPECT_DOUBLE_EQ(figure(h200, "memory.bandwidth"), 4.8e12);
  EXPECT_DOUBLE_EQ(figure(h200, "memory.size"), 141e9);
  EXPECT_DOUBLE_EQ(figure(h200, "compute.fp16_sparse"), 1979e12);
  EXPECT_DOUBLE_EQ(figure(c.get("H100-SXM"), "gpu.sm_count"), 132);
  EXPECT_DOUBLE_EQ(figure(c.get("H100-SXM"), "gpu.cuda_cores"), 16896);
  EXPECT_DOUBLE_EQ(figure(c.get("H100-SXM"), "clock.boost"), 1980e6);
  EXPECT_DOUBLE_EQ(figure(a100, "gpu.sm_count"), 108);
  EXPECT_DOUBLE_EQ(figure(a100, "gpu.cuda_cores"), 6912);
  EXPECT_DOUBLE_EQ(figure(a100, "clock.boost"), 1410e6);
  EXPECT_EQ(figure(a100, "power.tdp"), 400);
}

TEST(Catalogue, EveryEntryAndFigureHasAnHttpsSource) {
  for (const GpuSpec& g : Catalogue::builtin().gpus()) {
    EXPECT_TRUE(starts_with(g.source, "https://")) << g.id << ": " << g.source;
    for (const auto& [metric, f] : g.figures) {
      EXPECT_TRUE(starts_with(f.source, "https://")) << g.id << " " << metric;
      EXPECT_EQ(f.unit, find_metric(metric)->unit) << g.id << " " << metric;
      EXPECT_TRUE(std::isfinite(f.value) && f.value > 0) << g.id << " " << metric;
    }
    for (const std::string& url : g.checked_against)
      EXPECT_TRUE(starts_with(url, "https://")) << g.id << ": " << url;
  }
}

TEST(Catalogue, SparseFiguresAreTwiceTheDenseOnes) {
  // The sparse/dense rule of docs/catalogue.md: a *_sparse figure is the printed
  // one; the dense figure beside it is half of it (rounded down to the printed unit),
  // or the dense figure the datasheet prints. NVIDIA's L40S datasheet prints 362.05
  // dense and 733 sparse (2.02x): kept as printed, hence the 2.05 bound.
  for (const GpuSpec& g : Catalogue::builtin().gpus()) {
    for (const char* dense :
         {"compute.tf32", "compute.fp16", "compute.bf16", "compute.fp8", "compute.int8"}) {
      const auto d = g.figures.find(dense);
      const auto s = g.figures.find(std::string(dense) + "_sparse");
      if (d == g.figures.end() || s == g.figures.end()) continue;
      const double ratio = s->second.value / d->second.value;
      EXPECT_GE(ratio, 2.0) << g.id << " " << dense;
      EXPECT_LE(ratio, 2.05) << g.id << " " << dense;
    }
  }
}

TEST(Catalogue, HardwareWithoutAFeatureSaysNone) {
  const Catalogue& c = Catalogue::builtin();
  const auto lacks = [](const GpuSpec& g, const std::string& m) {
    return std::count(g.unsupported.begin(), g.unsupported.end(), m) == 1 && !g.figures.count(m);
  };
  EXPECT_TRUE(lacks(c.get("A100-SXM4-80GB"), "compute.fp8"));
  EXPECT_TRUE(lacks(c.get("V100-SXM2-32GB"), "compute.bf16"));
  EXPECT_TRUE(lacks(c.get("V100-SXM2-32GB"), "compute.fp64_tensor"));
  EXPECT_TRUE(lacks(c.get("L40S"), "compute.fp64_tensor"));
  EXPECT_TRUE(lacks(c.get("L4"), "compute.fp64_tensor"));
  EXPECT_TRUE(lacks(c.get("L4"), "link.nvlink"));
  EXPECT_FALSE(c.get("L4").nvlink_generation.has_value());
  EXPECT_EQ(c.get("H200-SXM").nvlink_generation, 4);
}

TEST(Catalogue, FindNormalisesCaseAndSeparators) {
  const Catalogue& c = Catalogue::builtin();
  ASSERT_NE(c.find("h200"), nullptr);
  EXPECT_EQ(c.find("h200")->id, "H200-SXM");
  EXPECT_EQ(c.find("H200 SXM")->id, "H200-SXM");
  EXPECT_EQ(c.find("h200_sxm_141gb")->id, "H200-SXM");
  EXPECT_EQ(c.find("a100 sxm4 80GB")->id, "A100-SXM4-80GB");
  EXPECT_EQ(c.find("A100-80GB-SXM")->id, "A100-SXM4-80GB");
  EXPECT_EQ(c.find("A100")->id, "A100-SXM4-80GB");
  EXPECT_EQ(c.find("V100")->id, "V100-SXM2-32GB");
  EXPECT_EQ(c.find("GH200")->id, "GH200-96GB");
  EXPECT_EQ(c.find("H300"), nullptr);
  EXPECT_EQ(c.find(""), nullptr);
  EXPECT_EQ(c.find(" - _"), nullptr);
}

TEST(Catalogue, GetSuggestsTheClosestNames) {
  const Catalogue& c = Catalogue::builtin();
  const std::vector<std::string> close = c.suggest("H300");
  ASSERT_EQ(close.size(), 3u);
  EXPECT_NE(std::find(close.begin(), close.end(), "H200-SXM"), close.end());
  EXPECT_NE(std::find(close.begin(), close.end(), "H100-SXM"), close.end());
  EXPECT_EQ(c.suggest("L40SS", 1), std::vector<std::string>{"L40S"});
  try {
    c.get("H300");
    FAIL() << "no error";
  } catch (const UsageError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(e.code(), ExitCode::kUsage);
    EXPECT_NE(msg.find("unknown GPU"), std::string::npos) << msg;
    EXPECT_NE(msg.find("H300"), std::string::npos) << msg;
    EXPECT_NE(msg.find("did you mean: "), std::string::npos) << msg;
    EXPECT_NE(msg.find("H200-SXM"), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
}

TEST(Catalogue, MatchDriverPrefersThePciDeviceId) {
  const Catalogue& c = Catalogue::builtin();
  const GpuSpec* g = c.match_driver("NVIDIA H200", 0x233510DEu);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->id, "H200-SXM");
  // The id decides even when the name is unexpected (a renamed or OEM board).
  EXPECT_EQ(c.match_driver("Some OEM name", 0x233510DEu)->id, "H200-SXM");
  EXPECT_EQ(c.match_driver("NVIDIA H200 NVL", 0x233B10DEu)->id, "H200-NVL");
  EXPECT_EQ(c.match_driver("NVIDIA A100-SXM4-80GB", 0x20B210DEu)->id, "A100-SXM4-80GB");
  EXPECT_EQ(c.match_driver("NVIDIA GH200 144G HBM3e", 0x234810DEu)->id, "GH200-144GB");
  // A bare device id (no vendor bits) is taken as it is.
  EXPECT_EQ(c.match_driver("", 0x2335u)->id, "H200-SXM");
  // Without an id, or with one nobody has, the exact driver name decides.
  EXPECT_EQ(c.match_driver("NVIDIA L4", std::nullopt)->id, "L4");
  EXPECT_EQ(c.match_driver("nvidia h100 80gb hbm3", 0xFFFF10DEu)->id, "H100-SXM");
  EXPECT_EQ(c.match_driver("NVIDIA Imaginary", std::nullopt), nullptr);
  EXPECT_EQ(c.match_driver("NVIDIA Imaginary", 0xFFFF10DEu), nullptr);
}

TEST(Catalogue, MatchDriverLetsTheNameDecideBetweenEntriesSharingAnId) {
  const char* text = R"({"schema": "gpuvs.catalogue/1", "gpus": [
    {"id": "X-A", "name": "X A", "driver_names": ["NVIDIA X A"], "pci_device_ids": ["0x1234"],
     "architecture": "Test", "form_factor": "PCIe", "memory_type": "HBM3",
     "source": "https://example.com/a", "figures": {}},
    {"id": "X-B", "name": "X B", "driver_names": ["NVIDIA X B"], "pci_device_ids": ["0x1234"],
     "architecture": "Test", "form_factor": "SXM", "memory_type": "HBM3",
     "source": "https://example.com/b", "figures": {}}]})";
  const Catalogue c = Catalogue::parse(text, "shared.json");
  EXPECT_EQ(c.match_driver("NVIDIA X B", 0x123410DEu)->id, "X-B");
  EXPECT_EQ(c.match_driver("NVIDIA X A", 0x123410DEu)->id, "X-A");
  EXPECT_EQ(c.match_driver("NVIDIA X C", 0x123410DEu), nullptr) << "ambiguous: no guess";
}

TEST(Catalogue, BreadthFromVoltaToBlackwell) {
  // The catalogue covers the GPUs people measure: data-centre, workstation and consumer
  // boards of every architecture from Volta to Blackwell.
  const Catalogue& c = Catalogue::builtin();
  EXPECT_GE(c.gpus().size(), 40u);
  std::map<std::string, int> per_architecture;
  for (const GpuSpec& g : c.gpus())
    ++per_architecture[g.architecture];
  for (const char* arch : {"Volta", "Turing", "Ampere", "Hopper", "Ada Lovelace", "Blackwell"})
    EXPECT_GE(per_architecture[arch], 1) << arch;
  for (const char* id : {"A10",
                         "A16",
                         "A30",
                         "A40",
                         "A800-40GB-Active",
                         "H20",
                         "H800-SXM",
                         "H800-PCIe",
                         "L20",
                         "L40",
                         "B100",
                         "GB200",
                         "B300",
                         "RTX-A6000",
                         "RTX-6000-Ada",
                         "RTX-PRO-6000-Blackwell",
                         "RTX-PRO-6000-Blackwell-Server",
                         "RTX-3090",
                         "RTX-4090",
                         "RTX-5090",
                         "T4"})
    EXPECT_NE(c.find(id), nullptr) << id;
}

TEST(Catalogue, EveryFigureHasASourceAndSparseIsNeverBelowDense) {
  for (const GpuSpec& g : Catalogue::builtin().gpus()) {
    EXPECT_FALSE(g.figures.empty() && g.unsupported.empty()) << g.id << " has no figure";
    for (const auto& [metric, f] : g.figures) {
      // Its own source, or the entry's (the loader fills it in): an http(s) URL either way.
      EXPECT_TRUE(starts_with(f.source, "https://") || starts_with(f.source, "http://"))
          << g.id << " " << metric;
      EXPECT_EQ(std::count(g.unsupported.begin(), g.unsupported.end(), metric), 0)
          << g.id << " " << metric << " is both a figure and none";
    }
    for (const char* dense :
         {"compute.tf32", "compute.fp16", "compute.bf16", "compute.fp8", "compute.int8"}) {
      const auto d = g.figures.find(dense);
      const auto s = g.figures.find(std::string(dense) + "_sparse");
      if (d != g.figures.end() && s != g.figures.end()) {
        EXPECT_GE(s->second.value, d->second.value) << g.id << " " << dense;
      }
      // A format the hardware lacks lacks its sparse figure too.
      if (std::count(g.unsupported.begin(), g.unsupported.end(), dense)) {
        EXPECT_EQ(s, g.figures.end()) << g.id << " " << dense;
      }
    }
  }
}

TEST(Catalogue, DriverNamesAndPciIdsPickOneEntry) {
  // detect and run files map a GPU by its PCI device id, then by the driver's name: no two
  // built-in entries share either, so neither ever needs the other to decide.
  const Catalogue& c = Catalogue::builtin();
  std::map<uint32_t, std::string> by_id;
  std::map<std::string, std::string> by_name;
  for (const GpuSpec& g : c.gpus()) {
    for (uint32_t id : g.pci_device_ids) {
      const auto [it, fresh] = by_id.emplace(id, g.id);
      EXPECT_TRUE(fresh) << fmt_hex(id) << ": " << it->second << " and " << g.id;
    }
    for (const std::string& n : g.driver_names) {
      const auto [it, fresh] = by_name.emplace(normalise_name(n), g.id);
      EXPECT_TRUE(fresh) << n << ": " << it->second << " and " << g.id;
      // A driver name is no other entry's id or alias.
      const GpuSpec* named = c.find(n);
      ASSERT_NE(named, nullptr) << n;
      EXPECT_EQ(named->id, g.id) << n;
    }
  }
  const std::vector<std::tuple<std::string, uint32_t, std::string>> detected = {
      {"NVIDIA GeForce RTX 4090", 0x268410DEu, "RTX-4090"},
      {"NVIDIA GeForce RTX 5090", 0x2B8510DEu, "RTX-5090"},
      {"NVIDIA GeForce RTX 3090", 0x220410DEu, "RTX-3090"},
      {"NVIDIA RTX 6000 Ada Generation", 0x26B110DEu, "RTX-6000-Ada"},
      {"NVIDIA RTX PRO 6000 Blackwell Workstation Edition", 0x2BB110DEu, "RTX-PRO-6000-Blackwell"},
      {"NVIDIA RTX PRO 6000 Blackwell Server Edition", 0x2BB510DEu,
       "RTX-PRO-6000-Blackwell-Server"},
      {"NVIDIA L40", 0x26B510DEu, "L40"},
      {"NVIDIA L20", 0x26BA10DEu, "L20"},
      {"NVIDIA A10", 0x223610DEu, "A10"},
      {"NVIDIA A30", 0x20B710DEu, "A30"},
      {"NVIDIA A40", 0x223510DEu, "A40"},
      {"NVIDIA H20", 0x232910DEu, "H20"},
      {"NVIDIA H800", 0x232410DEu, "H800-SXM"},
      {"NVIDIA H800 PCIe", 0x232210DEu, "H800-PCIe"},
      {"NVIDIA GB200", 0x294110DEu, "GB200"},
      {"NVIDIA B300 SXM6 AC", 0x318210DEu, "B300"},
      {"Tesla T4", 0x1EB810DEu, "T4"},
      {"Tesla V100-PCIE-32GB", 0x1DB610DEu, "V100-PCIe-32GB"}};
  for (const auto& [name, nvml_id, id] : detected) {
    const GpuSpec* g = c.match_driver(name, nvml_id);
    ASSERT_NE(g, nullptr) << name;
    EXPECT_EQ(g->id, id) << name;
    EXPECT_EQ(c.match_driver("", nvml_id)->id, id) << "the id alone decides: " << name;
    EXPECT_EQ(c.match_driver(name, std::nullopt)->id, id) << "the name alone decides: " << name;
  }
  // The A16 shares its device id (0x25b6) with the A2, which the catalogue lacks: it
  // lists no id, so an A2 is no A16 and only the driver's name finds the A16.
  EXPECT_TRUE(c.get("A16").pci_device_ids.empty());
  EXPECT_EQ(c.match_driver("NVIDIA A16", 0x25B610DEu)->id, "A16");
  EXPECT_EQ(c.match_driver("NVIDIA A2", 0x25B610DEu), nullptr);
}

TEST(Catalogue, FindTakesWhatNvidiaSmiPrints) {
  const Catalogue& c = Catalogue::builtin();
  EXPECT_EQ(c.find("NVIDIA GeForce RTX 4090")->id, "RTX-4090");
  EXPECT_EQ(c.find("nvidia geforce rtx 4090")->id, "RTX-4090");
  EXPECT_EQ(c.find("0x2684")->id, "RTX-4090");
  EXPECT_EQ(c.find("0x2B85")->id, "RTX-5090");
  EXPECT_EQ(c.find("NVIDIA H100 80GB HBM3")->id, "H100-SXM");
  EXPECT_EQ(c.find("0x2330")->id, "H100-SXM");
  EXPECT_EQ(c.find("0xFFFF"), nullptr);
  EXPECT_EQ(c.find("0x12345"), nullptr) << "more than 4 hex digits is no device id";
  // Shared by two entries: no guess.
  const Catalogue two = Catalogue::parse(R"({"schema": "gpuvs.catalogue/1", "gpus": [
    {"id": "X-A", "name": "X A", "driver_names": ["NVIDIA X"], "pci_device_ids": ["0x1234"],
     "architecture": "Test", "form_factor": "PCIe", "memory_type": "HBM3",
     "source": "https://example.com/a", "figures": {}},
    {"id": "X-B", "name": "X B", "driver_names": ["NVIDIA X"], "pci_device_ids": ["0x1234"],
     "architecture": "Test", "form_factor": "SXM", "memory_type": "HBM3",
     "source": "https://example.com/b", "figures": {}}]})",
                                         "shared.json");
  EXPECT_EQ(two.find("NVIDIA X"), nullptr);
  EXPECT_EQ(two.find("0x1234"), nullptr);
  EXPECT_EQ(two.find("x-b")->id, "X-B");
}

TEST(Catalogue, NormaliseName) {
  EXPECT_EQ(normalise_name("H200-SXM_141 GB"), "h200sxm141gb");
  EXPECT_EQ(normalise_name(""), "");
}

TEST(Published, BuiltinFiguresNameCatalogueGpusAndKnownMetrics) {
  const Published& p = Published::builtin();
  ASSERT_GE(p.figures().size(), 10u);
  for (const PublishedFigure& f : p.figures()) {
    EXPECT_NE(Catalogue::builtin().find(f.gpu), nullptr) << f.gpu;
    EXPECT_EQ(Catalogue::builtin().find(f.gpu)->id, f.gpu) << "stored as the catalogue id";
    const MetricDef* m = find_metric(f.metric);
    ASSERT_NE(m, nullptr) << f.metric;
    EXPECT_EQ(f.unit, m->unit);
    EXPECT_GT(f.value, 0);
    EXPECT_TRUE(starts_with(f.source, "https://")) << f.source;
    EXPECT_FALSE(f.publisher.empty());
    EXPECT_FALSE(f.setting.empty());
    EXPECT_FALSE(f.precision.empty());
    EXPECT_EQ(f.date.size(), 10u) << f.date;
  }
}

TEST(Published, HoldsTheFiguresTheReportUses) {
  const Published& p = Published::builtin();
  const auto has = [&](const std::string& gpu, const std::string& metric,
                       const std::string& publisher_part) {
    for (const PublishedFigure* f : p.for_gpu(gpu))
      if (f->metric == metric && f->publisher.find(publisher_part) != std::string::npos)
        return true;
    return false;
  };
  EXPECT_TRUE(has("A100-SXM4-80GB", "model.resnet50.train", "DeepLearningExamples"));
  EXPECT_TRUE(has("A100-SXM4-80GB", "model.bert-large.train", "DeepLearningExamples"));
  for (const char* gpu : {"A100-SXM4-80GB", "H100-SXM", "H200-SXM"}) {
    EXPECT_TRUE(has(gpu, "model.resnet50.infer", "MLPerf Inference")) << gpu;
    EXPECT_TRUE(has(gpu, "model.bert-large.infer", "MLPerf Inference")) << gpu;
  }
  for (const PublishedFigure& f : p.figures()) {
    if (f.publisher.find("MLPerf") != std::string::npos) {
      EXPECT_NE(f.setting.find("per GPU = system result / 8"), std::string::npos) << f.setting;
      EXPECT_EQ(f.suite, "MLPerf Inference Offline (closed division, TensorRT)");
    }
    // Settings in gpuvs's terms: the training figures name precision and batch.
    if (f.metric.find(".train") != std::string::npos) {
      EXPECT_FALSE(f.precision_key.empty()) << f.setting;
      EXPECT_TRUE(f.batch) << f.setting;
    }
  }
  EXPECT_TRUE(p.for_gpu("L4").empty());
}

TEST(Published, ParseAcceptsAnAliasAndStoresTheId) {
  const Published p = Published::parse(R"({"schema": "gpuvs.published/1", "figures": [
    {"gpu": "h200", "metric": "model.resnet50.infer", "value": 1.5, "unit": "img/s",
     "precision": "int8", "setting": "s", "source": "https://example.com", "publisher": "p",
     "date": "2024-08-28"}]})",
                                       "alias.json");
  ASSERT_EQ(p.figures().size(), 1u);
  EXPECT_EQ(p.figures()[0].gpu, "H200-SXM");
  EXPECT_DOUBLE_EQ(p.figures()[0].value, 1.5);
  // Without "suite" the publisher is the suite; without "config", no settings.
  EXPECT_EQ(p.figures()[0].suite, "p");
  EXPECT_TRUE(p.figures()[0].precision_key.empty());
  EXPECT_FALSE(p.figures()[0].batch);
}

TEST(Published, ConfigGivesTheSettingsAndRefusesUnknownOnes) {
  const std::string head = R"({"schema": "gpuvs.published/1", "figures": [
    {"gpu": "A100-SXM4-80GB", "metric": "model.bert_large.train", "value": 580, "unit": "seq/s",
     "precision": "mixed", "setting": "s", "source": "https://example.com", "publisher": "p",
     "date": "2024-08-28", "suite": "DLE", "config": )";
  const Published p = Published::parse(
      head + R"({"precision": "fp16", "batch": 256, "seq": 128}}]})", "config.json");
  ASSERT_EQ(p.figures().size(), 1u);
  const PublishedFigure& f = p.figures()[0];
  EXPECT_EQ(f.metric, "model.bert-large.train");  // the old spelling is read as the new id
  EXPECT_EQ(f.precision_key, "fp16");
  EXPECT_EQ(f.batch, 256);
  EXPECT_EQ(f.seq, 128);
  EXPECT_EQ(f.suite, "DLE");
  EXPECT_EQ(describe(f), "p: mixed, batch 256, seq 128, 2024-08-28");
  for (const auto& [config, field] :
       std::vector<std::pair<std::string, std::string>>{{R"({"precision": "fp17"})", "precision"},
                                                        {R"({"batch": 0})", "batch"},
                                                        {R"({"bach": 1})", "bach"}}) {
    try {
      Published::parse(head + config + "}]}", "bad.json");
      ADD_FAILURE() << config << " was accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("figures[0].config"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace gpuvs
