// gpuvs.1 and the completion scripts from the CLI11 definition (manpage.h).
#include "cli/manpage.h"

#include <fmt/format.h>

#include <cctype>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <utility>
#include <vector>

namespace gpuvs::cli {

namespace {

// Text for roff: backslashes as \e, a line never starting with a control character,
// and every character beyond ASCII as groff's \[uXXXX] (the page then reads the same
// whatever the locale troff runs in).
std::string roff(std::string_view text) {
  std::string out;
  bool line_start = true;
  for (size_t i = 0; i < text.size(); ++i) {
    const auto ch = static_cast<unsigned char>(text[i]);
    if (line_start && (ch == '.' || ch == '\'')) out += "\\&";
    line_start = ch == '\n';
    if (ch == '\\') {
      out += "\\e";
    } else if (ch < 0x80) {
      out += char(ch);
    } else {
      // A UTF-8 sequence: its length from the lead byte, then the code point.
      const int extra = ch >= 0xf0 ? 3 : ch >= 0xe0 ? 2 : ch >= 0xc0 ? 1 : 0;
      uint32_t cp = ch & (0x3f >> extra);
      for (int k = 0; k < extra && i + 1 < text.size(); ++k)
        cp = (cp << 6) | (static_cast<unsigned char>(text[++i]) & 0x3f);
      out += fmt::format("\\[u{:04X}]", cp);
    }
  }
  return out;
}

// An option's name in roff: "-q, --quiet", hyphens as \-.
std::string roff_flag(std::string_view name) {
  std::string out;
  for (char ch : name) {
    if (ch == '-')
      out += "\\-";
    else
      out += ch;
  }
  return out;
}

bool hidden(const CLI::Option* o) {
  return o->get_group().empty();
}

// --help in a command's own list: said once, for all, in the page's description.
bool is_help(const CLI::Option* o) {
  for (const std::string& l : o->get_lnames())
    if (l == "help" || l == "help-all") return true;
  return false;
}

// "-q, --quiet" or "MODEL" (positional).
std::string option_names(const CLI::Option* o) {
  if (!o->nonpositional()) return o->get_name(true);
  std::string out;
  for (const std::string& s : o->get_snames())
    out += (out.empty() ? "-" : ", -") + s;
  for (const std::string& l : o->get_lnames())
    out += (out.empty() ? "--" : ", --") + l;
  return out;
}

// Every name an option is typed as, for completion: "-q", "--quiet".
std::vector<std::string> typed_names(const CLI::Option* o) {
  std::vector<std::string> out;
  for (const std::string& s : o->get_snames())
    out.push_back("-" + s);
  for (const std::string& l : o->get_lnames())
    out.push_back("--" + l);
  return out;
}

std::vector<const CLI::Option*> visible_options(const CLI::App& app) {
  std::vector<const CLI::Option*> out;
  for (const CLI::Option* o : app.get_options())
    if (!hidden(o)) out.push_back(o);
  return out;
}

void man_options(std::string& out, const CLI::App& app, bool commands_help) {
  for (const CLI::Option* o : visible_options(app)) {
    if (!commands_help && is_help(o)) continue;
    out += ".TP\n";
    if (!o->nonpositional()) {
      out += fmt::format(".I {}\n", roff(option_names(o)));
    } else {
      std::string value;
      if (o->get_items_expected_max() > 0) value = o->get_type_name();
      out += value.empty()
                 ? fmt::format(".B {}\n", roff_flag(option_names(o)))
                 : fmt::format(".BI \"{} \" {}\n", roff_flag(option_names(o)), roff(value));
    }
    out += roff(o->get_description()) + "\n";
  }
}

void man_command(std::string& out, const CLI::App& sub, const std::string& path) {
  out += fmt::format(".SS \"gpuvs {}\"\n", path);
  out += roff(sub.get_description()) + "\n";
  man_options(out, sub, false);
  for (const CLI::App* child : sub.get_subcommands({}))
    man_command(out, *child, path + " " + child->get_name());
}

// The text up to the first ". " (a one-line description for the NAME section and the
// shells' menus), at most `max` characters.
std::string first_sentence(std::string_view text, size_t max) {
  // A sentence ends at ". " before a capital ("e.g. 0,1" does not end one).
  size_t end = text.size();
  for (size_t at = text.find(". "); at != std::string_view::npos; at = text.find(". ", at + 1))
    if (at + 2 < text.size() && std::isupper(static_cast<unsigned char>(text[at + 2]))) {
      end = at;
      break;
    }
  std::string s(text.substr(0, end));
  if (s.size() > max) s = s.substr(0, max - 3) + "...";
  return s;
}

// Where a completion stands: a command path ("", "specs", "specs list") and what can
// follow it, each with a one-line description.
struct Completions {
  std::vector<std::string> paths;
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> words;
};

void collect(const CLI::App& app, const std::string& path,
             const std::vector<const CLI::Option*>& global, Completions& c) {
  c.paths.push_back(path);
  auto& w = c.words[path];
  for (const CLI::App* sub : app.get_subcommands({}))
    w.emplace_back(sub->get_name(), first_sentence(sub->get_description(), 70));
  std::vector<const CLI::Option*> options = visible_options(app);
  if (!path.empty()) options.insert(options.end(), global.begin(), global.end());
  for (const CLI::Option* o : options)
    for (const std::string& name : typed_names(o))
      w.emplace_back(name, first_sentence(o->get_description(), 70));
  for (const CLI::App* sub : app.get_subcommands({}))
    collect(*sub, path.empty() ? sub->get_name() : path + " " + sub->get_name(), global, c);
}

Completions completions(const CLI::App& app) {
  // The global options every command takes too (fallthrough); not --help, which each
  // command has of its own, nor --version.
  std::vector<const CLI::Option*> global;
  for (const CLI::Option* o : visible_options(app))
    if (o->nonpositional() && !is_help(o) && o->get_lnames() != std::vector<std::string>{"version"})
      global.push_back(o);
  Completions c;
  collect(app, "", global, c);
  return c;
}

// A path as a shell case pattern: "specs list" quoted, a plain word as it is.
std::string pattern(const std::string& path) {
  return path.find(' ') == std::string::npos ? path : "\"" + path + "\"";
}

// Single-quoted for the shell: ' as '\''.
std::string shell_quoted(std::string_view s) {
  std::string out = "'";
  for (char ch : s) {
    if (ch == '\'')
      out += "'\\''";
    else
      out += ch;
  }
  return out + "'";
}

std::string known_paths(const Completions& c) {
  std::string out;
  for (const std::string& p : c.paths)
    if (!p.empty()) out += (out.empty() ? "" : "|") + pattern(p);
  return out;
}

// The loop both shells share: the words before the one being completed walk the
// command path (options skipped), into $cmdpath. `words`, `first` and `current`: the
// shell's array of the line, its first word after "gpuvs" and the index being
// completed; `open`: the case pattern's opening, "" or zsh's "(".
std::string path_walk(const Completions& c, std::string_view words, int first,
                      std::string_view current, std::string_view open) {
  return fmt::format(
      "  for ((i = {1}; i < {2}; i++)); do\n"
      "    [[ ${{{0}[i]}} == -* ]] && continue\n"
      "    next=\"${{cmdpath:+$cmdpath }}${{{0}[i]}}\"\n"
      "    case $next in\n"
      "      {3}{4}) cmdpath=$next ;;\n"
      "    esac\n"
      "  done\n",
      words, first, current, open, known_paths(c));
}

std::string bash_script(const Completions& c) {
  std::string out =
      "# bash completion for gpuvs (generated by `gpuvs --completion bash`)\n"
      "_gpuvs() {\n"
      "  local cur=${COMP_WORDS[COMP_CWORD]} cmdpath=\"\" next i\n";
  out += path_walk(c, "COMP_WORDS", 1, "COMP_CWORD", "");
  out +=
      "  local words\n"
      "  case $cmdpath in\n";
  for (const std::string& p : c.paths) {
    std::string words;
    for (const auto& [w, _] : c.words.at(p))
      words += (words.empty() ? "" : " ") + w;
    out +=
        fmt::format("    {}) words={} ;;\n", p.empty() ? "\"\"" : pattern(p), shell_quoted(words));
  }
  out +=
      "  esac\n"
      "  COMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n"
      "}\n"
      "complete -o default -F _gpuvs gpuvs\n";
  return out;
}

std::string zsh_script(const Completions& c) {
  std::string out =
      "#compdef gpuvs\n"
      "# zsh completion for gpuvs (generated by `gpuvs --completion zsh`)\n"
      "_gpuvs() {\n"
      "  local cmdpath=\"\" next i\n";
  out += path_walk(c, "words", 2, "CURRENT", "(");
  out +=
      "  local -a items\n"
      "  case $cmdpath in\n";
  for (const std::string& p : c.paths) {
    std::string items;
    for (const auto& [w, d] : c.words.at(p)) {
      std::string name;
      for (char ch : w)
        name += ch == ':' ? std::string("\\:") : std::string(1, ch);
      items += " " + shell_quoted(name + ":" + d);
    }
    out += fmt::format("    ({}) items=({} ) ;;\n", p.empty() ? "\"\"" : pattern(p), items);
  }
  out +=
      "  esac\n"
      "  _describe -t items gpuvs items\n"
      "}\n"
      "_gpuvs \"$@\"\n";
  return out;
}

}  // namespace

std::string render_man(const CLI::App& app, std::string_view version) {
  std::string description = app.get_description();
  if (description.rfind("gpuvs: ", 0) == 0) description = description.substr(7);
  if (!description.empty() && description[0] >= 'a' && description[0] <= 'z')
    description[0] = char(description[0] - 'a' + 'A');
  std::string out = fmt::format(".TH GPUVS 1 \"\" \"gpuvs {}\" \"User Commands\"\n", roff(version));
  std::string name = first_sentence(description, 200);
  if (!name.empty()) name[0] = char(std::tolower(static_cast<unsigned char>(name[0])));
  out += ".SH NAME\ngpuvs \\- " + roff(name) + "\n";
  out += ".SH SYNOPSIS\n.B gpuvs\n[\\fIGLOBAL OPTIONS\\fR] \\fICOMMAND\\fR [\\fIOPTIONS\\fR]\n";
  out += ".SH DESCRIPTION\n" + roff(description) + "\n";
  out += ".PP\nEvery command takes \\fB\\-\\-help\\fR; the global options go before or after it.\n";
  out += ".SH GLOBAL OPTIONS\n";
  man_options(out, app, true);
  out += ".SH COMMANDS\n";
  for (const CLI::App* sub : app.get_subcommands({}))
    man_command(out, *sub, sub->get_name());
  if (const std::string footer = app.get_footer(); !footer.empty())
    out += ".SH EXIT STATUS\n" + roff(footer) + "\n";
  out +=
      ".SH FILES\n"
      ".TP\n.I /usr/share/doc/gpuvs\n"
      "The documentation: what each command measures and how, the run file's schema, the "
      "reference runs; and examples/, a Slurm batch script for fleet runs.\n"
      ".TP\n.I gpuvs-results/\n"
      "Where commands write their run files and HTML reports unless \\fB\\-\\-out\\fR says "
      "otherwise.\n"
      ".SH SEE ALSO\n.BR nvidia-smi (1)\n";
  return out;
}

std::string render_completion(const CLI::App& app, std::string_view shell) {
  const Completions c = completions(app);
  if (shell == "bash") return bash_script(c);
  if (shell == "zsh") return zsh_script(c);
  throw std::invalid_argument(fmt::format("no completion for the shell '{}' (bash, zsh)", shell));
}

}  // namespace gpuvs::cli
