// The terminal forms of a tuned result: the table of `gpuvs tune` and `--show`, and
// the short lines of `gpuvs detect`. Every text from the document passes one_line.
#include "tune/emit.h"

#include <fmt/format.h>

#include "core/text.h"
#include "core/units.h"
#include "report/table.h"

namespace gpuvs::tune {

namespace {

std::string scope_text(const std::vector<std::string>& scope) {
  std::string out;
  for (const std::string& part : scope)
    out += (out.empty() ? "" : " ") + part;
  return out;
}

std::string value_text(const Setting& s) {
  std::string out = param_text(s.value);
  if (!s.env.empty()) out = s.env + "=" + out;
  return out;
}

// "model.bert-large.train.bf16 @ batch=856, graph=true = 1856 1/s".
std::string evidence_text(const Evidence& e) {
  std::string params;
  for (const auto& [key, value] : e.parameters)
    params += (params.empty() ? "" : ", ") + key + "=" + param_text(value);
  std::string out = e.result_id;
  if (!params.empty()) out += " @ " + params;
  out += " = " + format_si(e.value, e.unit, 4);
  if (e.basis != "measured") out += " (" + e.basis + ")";
  return out;
}

std::string rests_on_text(const std::vector<Evidence>& rests) {
  std::string out;
  for (const Evidence& e : rests)
    out += (out.empty() ? "" : "; ") + evidence_text(e);
  return out.empty() ? "-" : out;
}

std::string request_text(const TuneRequest& r) {
  std::string models;
  for (const std::string& m : r.models)
    models += (models.empty() ? "" : ", ") + m;
  std::string out = fmt::format("models {}{}, headroom {}", models.empty() ? "none" : models,
                                r.quick ? " (quick)" : "", r.headroom);
  if (r.global_batch) out += fmt::format(", global batch {}", *r.global_batch);
  for (const std::string& g : r.gemm_shapes)
    out += ", gemm " + g;
  return out;
}

std::string device_header(const DeviceTune& d) {
  return fmt::format(
      "GPU {} {} ({})\n  tuned {} by gpuvs {} (git {}) in {:.0f} s; run file {}\n"
      "  asked: {}\n",
      d.gpu_index, one_line(d.fingerprint.name), one_line(d.fingerprint.uuid),
      one_line(d.created_at), one_line(d.tool_version), one_line(d.git_sha), d.measure_seconds,
      one_line(d.run_file), one_line(request_text(d.request)));
}

}  // namespace

std::optional<EmitFormat> emit_format_from_string(std::string_view s) {
  if (s == "table") return EmitFormat::kTable;
  if (s == "env") return EmitFormat::kEnv;
  if (s == "python") return EmitFormat::kPython;
  return std::nullopt;
}

std::string render_tune_table(const TuneDocument& doc) {
  std::string out;
  if (doc.devices.empty()) return "No tuned result.\n";
  for (const DeviceTune& d : doc.devices) {
    if (!out.empty()) out += "\n";
    out += device_header(d);
    if (d.settings.empty()) {
      out += "  no settings recommended\n";
    } else {
      TextTable table({"scope", "setting", "value", "why", "rests on"});
      for (const Setting& s : d.settings)
        table.add_row(
            {scope_text(s.scope), s.key, value_text(s), s.why, rests_on_text(s.rests_on)});
      out += "\n" + table.render();
    }
    bool caveats = false;
    for (const Setting& s : d.settings) {
      if (s.caveat.empty()) continue;
      if (!caveats) out += "\nCaveats:\n";
      caveats = true;
      out += fmt::format("  {} {}: {}\n", one_line(scope_text(s.scope)), one_line(s.key),
                         one_line(s.caveat));
    }
    if (!d.absent.empty()) out += "\nNot recommended:\n";
    for (const Absent& a : d.absent)
      out += fmt::format("  {}: {}\n", one_line(a.section), one_line(a.why));
  }
  return out;
}

std::string render_detect_entry(int gpu, const Lookup& found) {
  if (found.kind == Lookup::Kind::kHit && found.entry) {
    const DeviceTune& d = *found.entry;
    std::string out = fmt::format("  GPU {}: tuned {}, run file {} ({} settings)\n", gpu,
                                  one_line(d.created_at), one_line(d.run_file), d.settings.size());
    for (const Setting& s : d.settings)
      out += fmt::format("    {} {} = {}: {}\n", one_line(scope_text(s.scope)), one_line(s.key),
                         one_line(value_text(s)), one_line(s.why));
    for (const Absent& a : d.absent)
      out += fmt::format("    {}: none ({})\n", one_line(a.section), one_line(a.why));
    return out;
  }
  if (found.kind == Lookup::Kind::kCorrupt || found.kind == Lookup::Kind::kStale)
    return fmt::format("  GPU {}: {}: run gpuvs tune\n", gpu, describe(found));
  return fmt::format("  GPU {}: not tuned: run gpuvs tune\n", gpu);
}

}  // namespace gpuvs::tune
