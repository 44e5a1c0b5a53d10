// Figures compared with references (compare.h). build_comparison: columns from run-file
// GPUs and catalogue entries, rows from the metric table, one per configuration; a
// measured figure wins over the datasheet (which then only stands in, labelled), and
// published figures get rows of their own settings. Verdicts only between figures of
// one basis; measured ones are noise-aware: a difference inside the measurement noise
// (or under 1 %) reads "same".
#include "report/compare.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <variant>

#include "core/units.h"
#include "core/verdict.h"
#include "report/summary.h"
#include "suite/produces.h"

namespace gpuvs {

const char* to_string(Source s) {
  switch (s) {
    case Source::kMeasured:
      return "measured";
    case Source::kDatasheet:
      return "datasheet";
    case Source::kPublished:
      return "published";
    case Source::kDerived:
      return "derived";
  }
  return "unknown";
}

std::string basis_of(const Cell& c) {
  if (!c.value || c.invalid) return "";
  return to_string(c.source);
}

const GpuSpec* spec_for(const CompareInput& input, const Catalogue& catalogue) {
  if (input.spec) return input.spec;
  if (!input.run) return nullptr;
  for (const GpuInfo& g : input.run->system.gpus)
    if (g.index == input.gpu_index) return catalogue.match_driver(g.name, g.pci_device_id);
  return nullptr;
}

namespace {

bool on_gpu(const Result& r, int gpu_index) {
  return std::find(r.devices.begin(), r.devices.end(), gpu_index) != r.devices.end();
}

std::optional<double> datasheet_value(const GpuSpec* spec, std::string_view metric) {
  if (!spec) return std::nullopt;
  auto it = spec->figures.find(std::string(metric));
  if (it == spec->figures.end()) return std::nullopt;
  return it->second.value;
}

std::string run_description(const RunFile& run, const std::string& run_ref) {
  if (!run_ref.empty()) return "run file " + run_ref;
  return fmt::format("run on {} at {}", run.meta.host, run.meta.started_at);
}

// A result's parameter as text; where it lacks one, the fallback its family declares
// (files written before the parameter existed). nullopt: neither.
std::optional<std::string> parameter_text(const Result& r, const FamilyDef* family,
                                          const std::string& name) {
  if (auto it = r.parameters.find(name); it != r.parameters.end()) return param_text(it->second);
  if (family)
    for (const ConfigParameter& c : family->config)
      if (c.name == name && !c.fallback.empty()) return std::string(c.fallback);
  return std::nullopt;
}

// A sweep point's size parameter as a number: nullopt when the text is not a finite
// number (a run file may hold "bytes": "abc"), so that such a point is no point.
std::optional<double> size_number(const std::string& text) {
  double v = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || ptr != end || !std::isfinite(v)) return std::nullopt;
  return v;
}

// The metric's configuration of a result (nullopt: it does not qualify, a `where`
// parameter differs). A config parameter the result lacks is left out.
std::optional<Config> config_of(const Result& r, const MetricDef& metric) {
  const auto match = match_result_id(r.id);
  const FamilyDef* family = match ? match->family : nullptr;
  for (const auto& [name, want] : metric.where) {
    const auto have = parameter_text(r, family, name);
    if (!have || *have != want) return std::nullopt;
  }
  Config c;
  for (const std::string& name : metric.config)
    if (auto v = parameter_text(r, family, name)) c.emplace_back(name, *v);
  if (!metric.size_parameter.empty()) {
    const auto size = parameter_text(r, family, metric.size_parameter);
    if (!size || !size_number(*size)) return std::nullopt;  // a sweep point needs its size
    c.emplace_back(metric.size_parameter, *size);
  }
  return c;
}

// "gpuvs", or the tool its result names (parameters.tool, else its family's tool).
std::string measured_by(const Result& r) {
  if (const auto it = r.parameters.find("tool");
      it != r.parameters.end() && std::holds_alternative<std::string>(it->second))
    return std::get<std::string>(it->second);
  if (const auto m = match_result_id(r.id); m && !m->family->tool.empty())
    return std::string(m->family->tool);
  return "gpuvs";
}

Cell cell_of(const RunFile& run, const Result& r, const MetricDef& metric, const GpuSpec* spec,
             const std::string& run_ref) {
  Cell c;
  c.source = Source::kMeasured;
  std::string where;
  if (metric.pick == Pick::kBest) {
    const auto src = int_parameter(r, "src"), dst = int_parameter(r, "dst");
    if (src && dst) where = fmt::format(" (GPU {} and {})", *src, *dst);
  }
  c.source_ref = fmt::format("{}, result {}{}", run_description(run, run_ref), r.id, where);
  c.measured_by = measured_by(r);
  if (metric.catalogue) c.datasheet = datasheet_value(spec, metric.id);
  if (r.status != Status::kOk) {
    c.invalid = true;
    c.note = r.status_reason.empty() ? "invalid: failed validation" : "invalid: " + r.status_reason;
    return c;
  }
  c.value = r.value;
  // Noise is a spread of samples: a figure of one sample or none (derived) has none to
  // show, which is not a noise of zero.
  if (r.stats.samples > 1) c.noise = r.stats.noise;
  c.throttled = throttled(r);
  c.power_capped = power_capped(r);
  if (c.datasheet && *c.datasheet > 0) c.of_datasheet = r.value / *c.datasheet;
  if (c.throttled) c.note = "measured while the GPU was " + clock_event_text(r);
  return c;
}

bool better(const MetricDef& m, double a, double b) {
  return m.higher_is_better ? a > b : a < b;
}

}  // namespace

std::vector<std::pair<Config, Cell>> measured_cells(const RunFile& run, int gpu_index,
                                                    const MetricDef& metric, const GpuSpec* spec,
                                                    const std::string& run_ref) {
  struct Pick {
    size_t rank = 0;  // index into result_ids: lower is better evidence
    const Result* result = nullptr;
  };
  std::vector<std::pair<Config, Pick>> ok, invalid;
  auto slot = [](std::vector<std::pair<Config, Pick>>& v, const Config& c) -> Pick& {
    for (auto& [k, p] : v)
      if (k == c) return p;
    v.push_back({c, Pick{}});
    return v.back().second;
  };
  auto has = [](const std::vector<std::pair<Config, Pick>>& v, const Config& c) {
    return std::any_of(v.begin(), v.end(), [&](const auto& e) { return e.first == c; });
  };
  // gpuvs's own results first; another tool's of the same definition (ranked after
  // them) only for a configuration where gpuvs's left nothing, valid or not.
  std::vector<std::string> ids = metric.result_ids;
  ids.insert(ids.end(), metric.tool_result_ids.begin(), metric.tool_result_ids.end());
  std::vector<std::pair<Config, Pick>> own_ok, own_invalid;
  for (size_t rank = 0; rank < ids.size(); ++rank) {
    const bool tool = rank >= metric.result_ids.size();
    if (tool && rank == metric.result_ids.size()) {
      own_ok = ok;
      own_invalid = invalid;
    }
    for (const Result& r : run.results) {
      if (r.id != ids[rank] || !on_gpu(r, gpu_index)) continue;
      const std::optional<Config> config = config_of(r, metric);
      if (!config) continue;
      if (tool && (has(own_ok, *config) || has(own_invalid, *config))) continue;
      if (r.status == Status::kOk && std::isfinite(r.value) && r.unit == metric.unit) {
        Pick& p = slot(ok, *config);
        const bool take = !p.result || rank < p.rank ||
                          (rank == p.rank && metric.pick == gpuvs::Pick::kBest &&
                           better(metric, r.value, p.result->value));
        if (take) p = {rank, &r};
      } else if (r.status == Status::kInvalid) {
        Pick& p = slot(invalid, *config);
        if (!p.result) p = {rank, &r};
      }
    }
  }
  std::vector<std::pair<Config, Cell>> out;
  for (const auto& [config, pick] : ok)
    out.emplace_back(config, cell_of(run, *pick.result, metric, spec, run_ref));
  for (const auto& entry : invalid) {
    const Config& config = entry.first;
    const bool measured =
        std::any_of(ok.begin(), ok.end(), [&](const auto& e) { return e.first == config; });
    if (!measured)
      out.emplace_back(config, cell_of(run, *entry.second.result, metric, spec, run_ref));
  }
  return out;
}

std::optional<Cell> measured_cell(const RunFile& run, int gpu_index, const MetricDef& metric,
                                  const GpuSpec* spec, const std::string& run_ref) {
  std::vector<std::pair<Config, Cell>> cells =
      measured_cells(run, gpu_index, metric, spec, run_ref);
  if (cells.empty()) return std::nullopt;
  // A sweep without a partner to agree a size with: its largest (or smallest) size.
  if (!metric.size_parameter.empty()) {
    auto size = [&](const Config& c) { return *size_number(c.back().second); };
    const bool largest = metric.pick == Pick::kLargest;
    std::stable_sort(cells.begin(), cells.end(), [&](const auto& a, const auto& b) {
      if (a.second.invalid != b.second.invalid) return !a.second.invalid;
      return largest ? size(a.first) > size(b.first) : size(a.first) < size(b.first);
    });
  }
  return cells.front().second;
}

std::string config_text(const MetricDef& metric, const Config& config) {
  std::vector<std::string> parts;
  const FamilyDef* family = nullptr;
  if (!metric.result_ids.empty())
    if (const auto m = match_result_id(metric.result_ids.front())) family = m->family;
  for (const auto& [name, value] : config) {
    bool at_default = false;
    if (family)
      for (const ConfigParameter& c : family->config)
        at_default = at_default || (c.name == name && !c.fallback.empty() && c.fallback == value);
    if (at_default) continue;
    if (name == "precision" || name == "attention") {
      parts.push_back(value);
    } else if (name == "ranks") {
      parts.push_back(fmt::format("{} GPUs", value));
    } else if (name == metric.size_parameter || name == "bytes") {
      char* end = nullptr;
      const double b = std::strtod(value.c_str(), &end);
      parts.push_back(end && *end == '\0' ? format_bytes_binary(static_cast<int64_t>(b)) : value);
    } else if (name == "graph") {
      parts.push_back(value == "true" ? "CUDA graph" : "no CUDA graph");
    } else if (name == "deterministic") {
      if (value == "true") parts.push_back("deterministic");
    } else if (name == "accumulate") {
      parts.push_back(fmt::format("x {} accumulated", value));
    } else if (name == "suite") {
      parts.push_back(value);
    } else {
      parts.push_back(fmt::format("{} {}", name, value));
    }
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

std::string measured_column_label(const RunFile& run, int gpu_index, const std::string& run_ref) {
  const GpuInfo* gpu = nullptr;
  for (const GpuInfo& g : run.system.gpus)
    if (g.index == gpu_index) gpu = &g;
  std::vector<std::string> parts;
  std::string name = gpu ? short_gpu_name(gpu->name) : fmt::format("GPU {}", gpu_index);
  if (run.system.gpus.size() > 1) name += fmt::format(" #{}", gpu_index);
  parts.push_back(name);
  if (!run.meta.host.empty()) parts.push_back(run.meta.host);
  if (gpu && !gpu->uuid.empty()) {
    std::string hex;
    for (char ch : gpu->uuid.rfind("GPU-", 0) == 0 ? gpu->uuid.substr(4) : gpu->uuid)
      if (std::isxdigit(static_cast<unsigned char>(ch)) && hex.size() < 8) hex += ch;
    if (!hex.empty()) parts.push_back(hex);
  }
  if (!run_ref.empty()) {
    std::string file = std::filesystem::path(run_ref).filename().string();
    if (file.size() > 5 && file.substr(file.size() - 5) == ".json") file.resize(file.size() - 5);
    parts.push_back(file);
  }
  return fmt::format("{}", fmt::join(parts, " "));
}

namespace {

std::string unique_label(std::string label, const std::vector<Column>& columns) {
  auto taken = [&](const std::string& l) {
    return std::any_of(columns.begin(), columns.end(),
                       [&](const Column& c) { return c.label == l; });
  };
  if (!taken(label)) return label;
  for (int n = 2;; ++n) {
    std::string candidate = fmt::format("{} ({})", label, n);
    if (!taken(candidate)) return candidate;
  }
}

Column make_column(const CompareInput& in, const GpuSpec* spec, const std::vector<Column>& done) {
  Column col;
  col.catalogue_id = spec ? spec->id : "";
  std::string derived;
  if (in.run) {
    col.measured = true;
    const GpuInfo* gpu = nullptr;
    for (const GpuInfo& g : in.run->system.gpus)
      if (g.index == in.gpu_index) gpu = &g;
    col.gpu_name = gpu ? gpu->name : fmt::format("GPU {}", in.gpu_index);
    col.file = in.run_ref;
    col.host = in.run->meta.host;
    col.gpu_index = in.gpu_index;
    col.uuid = gpu ? gpu->uuid : "";
    col.started_at = in.run->meta.started_at;
    col.measured_by = "gpuvs";
    if (in.run->meta.command == "import") {
      std::vector<std::string> tools;
      for (const Result& r : in.run->results)
        if (std::string t = measured_by(r);
            on_gpu(r, in.gpu_index) && std::find(tools.begin(), tools.end(), t) == tools.end())
          tools.push_back(std::move(t));
      col.measured_by = tools.empty() ? std::string("another tool (imported)")
                                      : fmt::format("{} (imported)", fmt::join(tools, ", "));
    }
    derived = measured_column_label(*in.run, in.gpu_index, in.run_ref);
  } else if (spec) {
    col.gpu_name = spec->name;
    derived = spec->id;
  }
  col.label = unique_label(in.label.empty() ? derived : in.label, done);
  return col;
}

// Relative tolerance under which two figures read "same": the measured cells'
// combined noise times `sigmas`, never under 1 %.
double same_tolerance(const Cell& a, const Cell& b, double sigmas) {
  double var = 0;
  for (const Cell* c : {&a, &b})
    if (c->source == Source::kMeasured && c->noise) var += *c->noise * *c->noise;
  return std::max(0.01, sigmas * std::sqrt(var));
}

void fill_verdict(Cell& cell, const Cell& base, const Row& row, double sigmas) {
  if (!cell.value || !base.value || cell.invalid || base.invalid) return;
  const std::string a = basis_of(cell), b = basis_of(base);
  if (a != b) {
    cell.verdict = std::string(kDifferentBasis);
    if (cell.datasheet && base.datasheet && *base.datasheet > 0)
      cell.datasheet_ratio = *cell.datasheet / *base.datasheet;
    return;
  }
  if (*base.value == 0) return;
  cell.basis = a;
  cell.ratio = *cell.value / *base.value;
  cell.diff_pct = (*cell.ratio - 1) * 100;
  if (std::fabs(*cell.ratio - 1) <= same_tolerance(cell, base, sigmas)) {
    cell.verdict = "same";
    return;
  }
  const bool higher = *cell.value > *base.value;
  if (row.speed)
    cell.verdict = higher == row.higher_is_better ? "faster" : "slower";
  else
    cell.verdict = higher ? "higher" : "lower";
}

// The datasheet cell of a column without a measurement: the figure, "none" where the
// datasheet says the GPU lacks it, else missing.
Cell datasheet_cell(const MetricDef& metric, const GpuSpec* spec, bool measured_column) {
  Cell c;
  if (!spec) return c;
  auto it = spec->figures.find(metric.id);
  if (it != spec->figures.end()) {
    c.value = it->second.value;
    c.datasheet = it->second.value;
    c.source = Source::kDatasheet;
    c.source_ref = it->second.source.empty() ? spec->source : it->second.source;
    c.note = it->second.note;
    c.fallback = measured_column;
    if (measured_column)
      c.note = c.note.empty() ? "datasheet: the run did not measure it"
                              : "datasheet: the run did not measure it; " + c.note;
    return c;
  }
  if (std::find(spec->unsupported.begin(), spec->unsupported.end(), metric.id) !=
      spec->unsupported.end()) {
    c.unsupported = true;
    c.source = Source::kDatasheet;
    c.source_ref = spec->source;
    c.note = "not supported by this GPU (datasheet)";
  }
  return c;
}

Row make_row(const MetricDef& metric, size_t columns) {
  Row row;
  row.metric = metric.id;
  row.name = metric.name;
  row.unit = metric.unit;
  row.higher_is_better = metric.higher_is_better;
  row.speed = is_speed_metric(metric);
  row.headline = metric.headline;
  row.group = metric.group;
  row.cells.resize(columns);
  return row;
}

double size_of(const Config& c) {
  return *size_number(c.back().second);
}

Config without_size(Config c) {
  c.pop_back();
  return c;
}

// Published rows of a model metric: one per (suite, settings), every column whose GPU
// has a figure of those settings in it. The settings: precision, batch, seq, suite.
void add_published_rows(const MetricDef& metric, const std::vector<const GpuSpec*>& specs,
                        const std::vector<size_t>& order, const Published& published,
                        std::vector<Row>& rows) {
  auto key_of = [](const PublishedFigure& f) {
    Config k;
    k.emplace_back("precision", f.precision_key.empty() ? f.precision : f.precision_key);
    if (f.batch) k.emplace_back("batch", std::to_string(*f.batch));
    if (f.seq) k.emplace_back("seq", std::to_string(*f.seq));
    k.emplace_back("suite", f.suite);
    return k;
  };
  std::vector<std::pair<Config, Row>> by_key;
  for (size_t i : order) {
    if (!specs[i]) continue;
    for (const PublishedFigure* f : published.for_gpu(specs[i]->id)) {
      if (f->metric != metric.id || f->unit != metric.unit || !(f->value > 0)) continue;
      const Config key = key_of(*f);
      auto it =
          std::find_if(by_key.begin(), by_key.end(), [&](const auto& e) { return e.first == key; });
      if (it == by_key.end()) {
        Row row = make_row(metric, specs.size());
        row.config = key;
        row.published = true;
        // "published, MLPerf Inference Offline (closed division, TensorRT): int8"
        Config shown;
        for (const auto& [k, v] : key)
          if (k != "suite" && !(k == "precision" && f->precision_key.empty()))
            shown.emplace_back(k, v);
        const std::string settings = config_text(metric, shown);
        row.config_text =
            fmt::format("published, {}{}", f->suite, settings.empty() ? "" : ": " + settings);
        by_key.emplace_back(key, std::move(row));
        it = std::prev(by_key.end());
      }
      Cell& c = it->second.cells[i];
      if (c.value) continue;  // the first figure of a GPU in a suite and setting
      c.value = f->value;
      c.source = Source::kPublished;
      c.source_ref = f->source;
      c.note = describe(*f);
    }
  }
  for (auto& [key, row] : by_key)
    rows.push_back(std::move(row));
}

}  // namespace

Comparison build_comparison(const std::vector<CompareInput>& inputs, const Catalogue& catalogue,
                            const Published& published, const CompareOptions& options) {
  Comparison out;
  std::vector<const GpuSpec*> specs;
  for (const CompareInput& in : inputs) {
    specs.push_back(spec_for(in, catalogue));
    out.columns.push_back(make_column(in, specs.back(), out.columns));
  }
  out.baseline = options.baseline < out.columns.size() ? options.baseline : 0;
  const size_t n = inputs.size();
  // The baseline first: configurations appear in the order it has them.
  std::vector<size_t> order{out.baseline};
  for (size_t i = 0; i < n; ++i)
    if (i != out.baseline) order.push_back(i);

  for (const MetricDef& metric : metrics()) {
    // Measured cells by column and configuration.
    std::vector<std::vector<std::pair<Config, Cell>>> measured(n);
    for (size_t i = 0; i < n; ++i)
      if (inputs[i].run)
        measured[i] = measured_cells(*inputs[i].run, inputs[i].gpu_index, metric, specs[i],
                                     inputs[i].run_ref);

    // Sweeps: agree on one size per configuration, the largest (or smallest) that
    // every column measuring that configuration has.
    if (!metric.size_parameter.empty()) {
      std::vector<Config> bases;
      for (size_t i : order)
        for (const auto& [c, cell] : measured[i])
          if (std::find(bases.begin(), bases.end(), without_size(c)) == bases.end())
            bases.push_back(without_size(c));
      for (size_t i = 0; i < n; ++i) {
        std::vector<std::pair<Config, Cell>> kept;
        for (const Config& base : bases) {
          std::optional<double> chosen;
          std::set<double> common;
          bool first = true;
          for (size_t j = 0; j < n; ++j) {
            std::set<double> sizes;
            for (const auto& [c, cell] : measured[j])
              if (without_size(c) == base && !cell.invalid) sizes.insert(size_of(c));
            if (sizes.empty()) continue;
            if (first) {
              common = sizes;
              first = false;
            } else {
              std::set<double> both;
              std::set_intersection(common.begin(), common.end(), sizes.begin(), sizes.end(),
                                    std::inserter(both, both.begin()));
              common = both;
            }
          }
          std::set<double> own;
          for (const auto& [c, cell] : measured[i])
            if (without_size(c) == base && !cell.invalid) own.insert(size_of(c));
          const std::set<double>& from = common.empty() ? own : common;
          if (!from.empty())
            chosen = metric.pick == Pick::kSmallest ? *from.begin() : *from.rbegin();
          for (const auto& [c, cell] : measured[i])
            if (without_size(c) == base && chosen && size_of(c) == *chosen && !cell.invalid)
              kept.emplace_back(c, cell);
          // A configuration measured only invalid: one invalid cell stands for it.
          if (own.empty())
            for (const auto& [c, cell] : measured[i])
              if (without_size(c) == base && cell.invalid) {
                kept.emplace_back(c, cell);
                break;
              }
        }
        measured[i] = std::move(kept);
      }
    }

    std::vector<Row> rows;
    std::vector<Config> keys;
    for (size_t i : order)
      for (const auto& [c, cell] : measured[i])
        if (std::find(keys.begin(), keys.end(), c) == keys.end()) keys.push_back(c);
    // One row per configuration; a plain metric has one (empty) configuration.
    if (keys.empty() && metric.config.empty() && metric.size_parameter.empty()) keys.push_back({});
    for (const Config& key : keys) {
      Row row = make_row(metric, n);
      row.config = key;
      row.config_text = config_text(metric, key);
      for (size_t i = 0; i < n; ++i)
        for (const auto& [c, cell] : measured[i])
          if (c == key) row.cells[i] = cell;
      rows.push_back(std::move(row));
    }
    // The datasheet stands in for columns without a measurement (labelled), in the
    // metric's rows, or in a row of its own where nothing was measured.
    if (metric.catalogue && options.include_datasheet_rows) {
      if (rows.empty()) {
        Row row = make_row(metric, n);
        rows.push_back(std::move(row));
      }
      for (Row& row : rows)
        for (size_t i = 0; i < n; ++i)
          if (!row.cells[i].value && !row.cells[i].invalid)
            row.cells[i] = datasheet_cell(metric, specs[i], inputs[i].run != nullptr);
    }
    if (options.include_published && metric.group == MetricGroup::kModels)
      add_published_rows(metric, specs, order, published, rows);

    for (Row& row : rows) {
      const bool any = std::any_of(row.cells.begin(), row.cells.end(), [](const Cell& c) {
        return c.value || c.invalid || c.unsupported;
      });
      if (!any) continue;
      Cell& base = row.cells[out.baseline];
      if (base.value && !base.invalid) {
        base.verdict = std::string(kBaseline);
        base.basis = basis_of(base);
        base.ratio = 1;
        base.diff_pct = 0;
      }
      for (size_t i = 0; i < n; ++i)
        if (i != out.baseline) fill_verdict(row.cells[i], base, row, options.same_sigmas);
      out.rows.push_back(std::move(row));
    }
  }
  return out;
}

}  // namespace gpuvs
