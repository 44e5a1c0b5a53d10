// `gpuvs specs list | show NAME | diff A B`: the datasheet catalogue, as a table or
// (--json) as JSON on stdout. Every figure is shown with its unit and source; a
// figure the catalogue lacks reads "missing" and one the hardware lacks reads
// "none", never 0. `--catalogue FILE` replaces the built-in catalogue.
#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <memory>

#include <nlohmann/json.hpp>

#include "cli/app.h"
#include "core/text.h"
#include "core/units.h"
#include "report/table.h"
#include "specs/catalogue.h"
#include "specs/metrics.h"
#include "specs/published.h"

namespace gpuvs::cli {

namespace {

using ojson = nlohmann::ordered_json;
using Align = TextTable::Align;

struct SpecsArgs {
  std::string catalogue_path;
  std::string name;
  std::string a;
  std::string b;
  std::unique_ptr<Catalogue> loaded;  // --catalogue, once read

  const Catalogue& catalogue() {
    if (catalogue_path.empty()) return Catalogue::builtin();
    if (!loaded) loaded = std::make_unique<Catalogue>(Catalogue::load(catalogue_path));
    return *loaded;
  }
};

// Datasheet figures are shown with as many digits as they were written with (at
// least 3): 2039 GB/s reads "2.039 TB/s", not "2.04 TB/s".
// Counts, watts and model throughput read best as plain numbers ("700 W", "2470
// img/s"), with the decimals they were written with. Text is read back with strtod,
// not std::stod, which throws for a subnormal value.
std::string format_figure(double value, std::string_view unit) {
  const auto read_back = [](const std::string& t) { return std::strtod(t.c_str(), nullptr); };
  if (unit == "1" || unit == "W" || unit == "img/s" || unit == "seq/s") {
    std::string s = fmt::format("{:.1f}", value);
    for (int decimals = 0; decimals <= 2; ++decimals) {
      const std::string t = fmt::format("{:.{}f}", value, decimals);
      if (read_back(t) == value) {
        s = t;
        break;
      }
    }
    return unit == "1" ? s : s + " " + std::string(unit);
  }
  int digits = 3;
  for (; digits < 6; ++digits) {
    const double rounded = read_back(fmt::format("{:.{}e}", value, digits - 1));
    if (std::fabs(rounded - value) <= 1e-9 * std::fabs(value)) break;
  }
  return format_si(value, unit, digits);
}

bool unsupported(const GpuSpec& g, std::string_view metric) {
  return std::find(g.unsupported.begin(), g.unsupported.end(), metric) != g.unsupported.end();
}

// The figure as shown in a table cell: value, "none" or "missing".
std::string cell(const GpuSpec& g, std::string_view metric) {
  const auto it = g.figures.find(std::string(metric));
  if (it != g.figures.end()) return format_figure(it->second.value, it->second.unit);
  return unsupported(g, metric) ? "none" : "missing";
}

std::string identity_line(const GpuSpec& g) {
  std::string s = g.architecture + ", " + g.form_factor + ", " + g.memory_type;
  if (g.tensor_core_generation)
    s += fmt::format(", tensor cores gen {}", *g.tensor_core_generation);
  if (g.pcie_generation) s += fmt::format(", PCIe Gen{}", *g.pcie_generation);
  s += g.nvlink_generation ? fmt::format(", NVLink {}", *g.nvlink_generation) : ", no NVLink";
  return s;
}

std::vector<std::string> pci_strings(const GpuSpec& g) {
  std::vector<std::string> out;
  for (uint32_t id : g.pci_device_ids)
    out.push_back(fmt::format("0x{:04x}", id));
  return out;
}

ojson figure_json(const GpuSpec& g, const MetricDef& m) {
  ojson j;
  j["metric"] = m.id;
  j["name"] = m.name;
  const auto it = g.figures.find(std::string(m.id));
  if (it == g.figures.end()) {
    j["value"] = nullptr;
    j["unit"] = m.unit;
    j["status"] = unsupported(g, m.id) ? "none" : "missing";
    return j;
  }
  j["value"] = it->second.value;
  j["unit"] = it->second.unit;
  j["status"] = "datasheet";
  j["note"] = it->second.note;
  j["source"] = it->second.source;
  return j;
}

ojson gpu_json(const GpuSpec& g, bool with_missing) {
  ojson j;
  j["id"] = g.id;
  j["name"] = g.name;
  j["aliases"] = g.aliases;
  j["driver_names"] = g.driver_names;
  j["pci_device_ids"] = pci_strings(g);
  j["architecture"] = g.architecture;
  j["form_factor"] = g.form_factor;
  j["memory_type"] = g.memory_type;
  const auto opt = [](const std::optional<int>& v) { return v ? ojson(*v) : ojson(nullptr); };
  j["tensor_core_generation"] = opt(g.tensor_core_generation);
  j["pcie_generation"] = opt(g.pcie_generation);
  j["nvlink_generation"] = opt(g.nvlink_generation);
  j["source"] = g.source;
  j["checked_against"] = g.checked_against;
  j["note"] = g.note;
  ojson figures = ojson::array();
  for (const MetricDef& m : metrics()) {
    if (with_missing || g.figures.count(std::string(m.id)) || unsupported(g, m.id))
      figures.push_back(figure_json(g, m));
  }
  j["figures"] = std::move(figures);
  return j;
}

ojson published_json(const PublishedFigure& f) {
  return ojson{{"metric", f.metric},       {"value", f.value},     {"unit", f.unit},
               {"precision", f.precision}, {"setting", f.setting}, {"publisher", f.publisher},
               {"date", f.date},           {"source", f.source}};
}

void print_json(const ojson& j) {
  print_text(stdout, "{}\n", j.dump(2, ' ', false, ojson::error_handler_t::replace));
}

void run_list(const GlobalOptions& global, SpecsArgs& args) {
  const Catalogue& catalogue = args.catalogue();
  if (global.json) {
    ojson gpus = ojson::array();
    for (const GpuSpec& g : catalogue.gpus())
      gpus.push_back(gpu_json(g, false));
    print_json(ojson{{"schema", "gpuvs.specs.list/1"}, {"gpus", std::move(gpus)}});
    return;
  }
  TextTable table(
      {"id", "name", "architecture", "memory", "bandwidth", "FP16/BF16 dense", "FP8 dense", "TDP"},
      {Align::kLeft, Align::kLeft, Align::kLeft, Align::kRight, Align::kRight, Align::kRight,
       Align::kRight, Align::kRight});
  for (const GpuSpec& g : catalogue.gpus()) {
    std::string half = cell(g, "compute.fp16");
    const std::string bf16 = cell(g, "compute.bf16");
    if (bf16 != half) half += " / " + bf16;
    table.add_row({g.id, g.name, g.architecture, cell(g, "memory.size"),
                   cell(g, "memory.bandwidth"), half, cell(g, "compute.fp8"),
                   cell(g, "power.tdp")});
  }
  print_text(stdout, "{}", table.render());
  print_text(stdout,
             "\nDatasheet figures; tensor figures dense (without sparsity). `gpuvs specs show ID` "
             "gives every figure and its source.\n");
}

void run_show(const GlobalOptions& global, SpecsArgs& args) {
  const GpuSpec& g = args.catalogue().get(args.name);
  const std::vector<const PublishedFigure*> published = Published::builtin().for_gpu(g.id);
  if (global.json) {
    ojson j{{"schema", "gpuvs.specs.gpu/1"}};
    j.update(gpu_json(g, true));
    ojson pub = ojson::array();
    for (const PublishedFigure* f : published)
      pub.push_back(published_json(*f));
    j["published"] = std::move(pub);
    print_json(j);
    return;
  }
  print_text(stdout, "{} ({})\n", one_line(g.id), one_line(g.name));
  print_text(stdout, "  {}\n", one_line(identity_line(g)));
  if (!g.aliases.empty())
    print_text(stdout, "  aliases: {}\n", one_line(fmt::format("{}", fmt::join(g.aliases, ", "))));
  if (!g.driver_names.empty())
    print_text(stdout, "  driver names: {}\n",
               one_line(fmt::format("{}", fmt::join(g.driver_names, ", "))));
  if (!g.pci_device_ids.empty())
    print_text(stdout, "  PCI device ids: {}\n", fmt::join(pci_strings(g), ", "));
  if (!g.note.empty()) print_text(stdout, "  note: {}\n", one_line(g.note));
  print_text(stdout, "  datasheet: {}\n", one_line(g.source));
  for (const std::string& url : g.checked_against)
    print_text(stdout, "  read from: {}\n", one_line(url));
  print_text(stdout, "\n");

  std::vector<std::string> other_sources;  // per-figure sources other than the datasheet
  const auto source_mark = [&](const std::string& url) -> std::string {
    if (url == g.source) return "datasheet";
    auto it = std::find(other_sources.begin(), other_sources.end(), url);
    if (it == other_sources.end()) it = other_sources.insert(other_sources.end(), url);
    return fmt::format("[{}]", it - other_sources.begin() + 1);
  };
  TextTable table({"metric", "value", "source", "note"},
                  {Align::kLeft, Align::kRight, Align::kLeft, Align::kLeft});
  std::vector<std::string> none;
  for (const MetricDef& m : metrics()) {
    const auto it = g.figures.find(std::string(m.id));
    if (it != g.figures.end()) {
      table.add_row({std::string(m.name), format_figure(it->second.value, it->second.unit),
                     source_mark(it->second.source), it->second.note});
    } else if (unsupported(g, m.id)) {
      none.emplace_back(m.name);
    }
  }
  print_text(stdout, "{}", table.render());
  for (size_t i = 0; i < other_sources.size(); ++i)
    print_text(stdout, "[{}] {}\n", i + 1, one_line(other_sources[i]));
  if (!none.empty()) print_text(stdout, "Not in this GPU: {}.\n", fmt::join(none, ", "));
  print_text(stdout, "Metrics not listed are missing from the catalogue.\n");

  if (published.empty()) return;
  print_text(stdout, "\nPublished results (measured by others, not by gpuvs):\n");
  for (const PublishedFigure* f : published) {
    const MetricDef* m = find_metric(f->metric);
    print_text(stdout, "  {}: {}, {} ({}, {})\n      {}\n      {}\n", m ? m->name : f->metric,
               format_figure(f->value, f->unit), one_line(f->precision), one_line(f->publisher),
               one_line(f->date), one_line(f->setting), one_line(f->source));
  }
}

std::string format_ratio(double r) {
  return fmt::format("{:.2f}x", r);
}

std::string format_pct(double p) {
  if (p == 0) return "0 %";
  return std::fabs(p) >= 10 ? fmt::format("{:+.0f} %", p) : fmt::format("{:+.1f} %", p);
}

void run_diff(const GlobalOptions& global, SpecsArgs& args) {
  const Catalogue& catalogue = args.catalogue();
  const GpuSpec& a = catalogue.get(args.a);
  const GpuSpec& b = catalogue.get(args.b);
  ojson rows = ojson::array();
  TextTable table({"metric", a.id, b.id, b.id + " / " + a.id, "difference"},
                  {Align::kLeft, Align::kRight, Align::kRight, Align::kRight, Align::kRight});
  std::vector<std::pair<std::string, std::string>> sources = {{a.id, a.source}};
  if (b.id != a.id) sources.emplace_back(b.id, b.source);
  const auto note_source = [&](const GpuSpec& g, const MetricDef& m) {
    const auto it = g.figures.find(std::string(m.id));
    if (it != g.figures.end() && it->second.source != g.source)
      sources.emplace_back(fmt::format("{}, {}", g.id, m.name), it->second.source);
  };
  for (const MetricDef& m : metrics()) {
    const auto fa = a.figures.find(std::string(m.id));
    const auto fb = b.figures.find(std::string(m.id));
    const bool has_a = fa != a.figures.end();
    const bool has_b = fb != b.figures.end();
    if (!has_a && !has_b) continue;
    std::optional<double> ratio;
    if (has_a && has_b) ratio = fb->second.value / fa->second.value;
    ojson row{{"metric", m.id}, {"name", m.name}, {"unit", m.unit}};
    row["a"] = figure_json(a, m);
    row["b"] = figure_json(b, m);
    row["ratio"] = ratio ? ojson(*ratio) : ojson(nullptr);
    row["diff_pct"] = ratio ? ojson((*ratio - 1) * 100) : ojson(nullptr);
    rows.push_back(std::move(row));
    table.add_row({std::string(m.name), cell(a, m.id), cell(b, m.id),
                   ratio ? format_ratio(*ratio) : "", ratio ? format_pct((*ratio - 1) * 100) : ""});
    note_source(a, m);
    note_source(b, m);
  }
  if (global.json) {
    ojson src = ojson::array();
    for (const auto& [what, url] : sources)
      src.push_back(ojson{{"for", what}, {"url", url}});
    print_json(ojson{{"schema", "gpuvs.specs.diff/1"},
                     {"a", a.id},
                     {"b", b.id},
                     {"rows", std::move(rows)},
                     {"sources", src}});
    return;
  }
  print_text(stdout, "{} vs {} (datasheet figures; tensor figures dense unless marked sparse)\n\n",
             one_line(a.id), one_line(b.id));
  print_text(stdout, "{}", table.render());
  print_text(stdout,
             "\nmissing: not in the catalogue; none: the GPU does not have it.\nSources:\n");
  for (const auto& [what, url] : sources)
    print_text(stdout, "  {}: {}\n", one_line(what), one_line(url));
}

}  // namespace

void add_specs_command(CLI::App& app, CliContext& ctx) {
  auto args = std::make_shared<SpecsArgs>();
  CLI::App* sub = app.add_subcommand(
      "specs", "The datasheet catalogue: list, show NAME, diff A B (figures with their sources)");
  sub->add_option("--catalogue", args->catalogue_path,
                  "Catalogue file to use instead of the built-in one (docs/catalogue.md)");
  sub->require_subcommand(1);

  CLI::App* list = sub->add_subcommand("list", "One row per GPU of the catalogue");
  list->fallthrough();
  list->callback([&ctx, args] {
    run_list(ctx.global, *args);
    ctx.exit_code = ExitCode::kOk;
  });

  CLI::App* show = sub->add_subcommand("show", "Every figure of one GPU, with units and sources");
  show->add_option("name", args->name, "GPU id or alias, e.g. H200-SXM or H200")->required();
  show->fallthrough();
  show->callback([&ctx, args] {
    run_show(ctx.global, *args);
    ctx.exit_code = ExitCode::kOk;
  });

  CLI::App* diff = sub->add_subcommand("diff", "Two GPUs side by side: A, B, B/A and difference");
  diff->add_option("a", args->a, "First GPU (the baseline)")->required();
  diff->add_option("b", args->b, "Second GPU")->required();
  diff->fallthrough();
  diff->callback([&ctx, args] {
    run_diff(ctx.global, *args);
    ctx.exit_code = ExitCode::kOk;
  });
}

}  // namespace gpuvs::cli
