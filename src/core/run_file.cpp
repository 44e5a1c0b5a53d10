// Run files on disk: JSON text -> checked document -> RunFile, and back, atomically.
//
// parse_run_file works in three steps, each with its own kind of message:
//  1. JSON syntax, through nlohmann's SAX parser (iterative) into our own DOM builder,
//     which also refuses nesting deeper than kMaxDepth (so hostile input cannot
//     exhaust the stack of anything that later walks the tree recursively) and
//     duplicate keys (JSON leaves their meaning open; readers disagree);
//  2. the schema string: foreign files and newer versions are named as such;
//  3. the fields (run_file_json.cpp).
// Every failure is one UsageError line starting with the file's name. Strings that
// pass step 1 are valid UTF-8 (nlohmann's lexer checks), so to_json_text of a parsed
// run never throws and reproduces it.
//
// The message helpers of run_file_json.h live here too, next to the syntax and
// schema messages that use them most.
//
// save_run_file checks the text it is about to write by parsing it back, then writes
// it through write_file_atomically (atomic_file.h): readers see the old file or the
// new one, never a mix, and a failure leaves `path` untouched.
#include "core/run_file.h"

#include <cstdint>
#include <utility>
#include <variant>

#include <fmt/format.h>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/input_file.h"
#include "core/run_file_json.h"
#include "core/text.h"

// Message helpers declared in run_file_json.h: they keep every message one line of
// valid UTF-8 whatever the file holds.
namespace gpuvs::run_json {

namespace {

// The longest prefix of `s` of at most `max_bytes` that does not split a UTF-8
// character (a continuation byte 10xxxxxx never starts the dropped part).
std::string_view utf8_prefix(std::string_view s, std::size_t max_bytes) {
  if (s.size() <= max_bytes) return s;
  std::size_t n = max_bytes;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80)
    --n;
  return s.substr(0, n);
}

// The control-character rule of core/text.h, so that a message is one line and valid
// UTF-8 (it may end up in JSON output).
std::string escape_for_message(std::string_view s, bool escape_quotes) {
  return escape_controls(s, false, escape_quotes);
}

}  // namespace

std::string printable(std::string_view s, std::size_t max_bytes) {
  const std::string_view head = utf8_prefix(s, max_bytes);
  return escape_for_message(head, false) + (head.size() < s.size() ? "..." : "");
}

std::string quote(std::string_view s, std::size_t max_bytes) {
  const std::string_view head = utf8_prefix(s, max_bytes);
  return "\"" + escape_for_message(head, true) + (head.size() < s.size() ? "..." : "") + "\"";
}

std::string_view json_error_reason(std::string_view what) {
  if (!what.empty() && what.front() == '[') {
    const auto end = what.find("] ");
    if (end != std::string_view::npos) what.remove_prefix(end + 2);
  }
  for (std::string_view noise : {"parse error at ", "parse error: ", "parse error"}) {
    if (what.substr(0, noise.size()) == noise) {
      what.remove_prefix(noise.size());
      break;
    }
  }
  return what;
}

void append_key(std::string& path, std::string_view key) {
  const bool plain = !key.empty() && key.size() <= 64 && [&] {
    for (char c : key) {
      const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '_' || c == '-';
      if (!ok) return false;
    }
    return true;
  }();
  if (plain) {
    if (!path.empty()) path += '.';
    path += key;
  } else {
    path += "[" + quote(key) + "]";
  }
}

void fail(std::string_view name, std::string_view path, std::string_view problem) {
  std::string msg = printable(name, 4096) + ": ";
  if (!path.empty()) msg += std::string(path) + ": ";
  msg += problem;
  throw UsageError(std::move(msg));
}

}  // namespace gpuvs::run_json

namespace gpuvs {

namespace {

using json = nlohmann::json;

constexpr std::size_t kMaxDepth = 64;  // a run file nests 6 levels deep

// Builds a nlohmann::json from SAX events, like nlohmann's own DOM parser, but stops
// at the first depth or duplicate-key violation and keeps the message for it.
class DomBuilder final : public nlohmann::json_sax<json> {
 public:
  json root;
  std::string error;  // "<path>: <problem>" or a syntax message; empty while fine

  bool null() override { return scalar(json(nullptr)); }
  bool boolean(bool v) override { return scalar(json(v)); }
  bool number_integer(number_integer_t v) override { return scalar(json(v)); }
  bool number_unsigned(number_unsigned_t v) override { return scalar(json(v)); }
  bool number_float(number_float_t v, const string_t& /*text*/) override { return scalar(json(v)); }
  bool string(string_t& v) override { return scalar(json(std::move(v))); }
  // Only the binary formats (CBOR, ...) produce binary values, never JSON text.
  bool binary(binary_t& /*v*/) override { return false; }

  bool start_object(std::size_t /*elements*/) override { return open(json::object()); }
  bool start_array(std::size_t /*elements*/) override { return open(json::array()); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }

  bool key(string_t& k) override {
    Frame& top = stack_.back();
    if (top.value->contains(k)) {
      std::string path = container_path();
      run_json::append_key(path, k);
      error = path + ": duplicate key (each key may appear once per object)";
      return false;
    }
    top.key = std::move(k);
    return true;
  }

  bool parse_error(std::size_t position, const std::string& /*last_token*/,
                   const nlohmann::detail::exception& ex) override {
    // what(): "[json.exception.parse_error.101] parse error at line 1, column 5:
    // syntax error while parsing value - invalid literal; last read: 'NaN'".
    const std::string_view reason = run_json::json_error_reason(ex.what());
    // nlohmann counts the failing byte from 1 (the end of input as one past the last
    // byte); messages give the 0-based offset, as hex dumps and `cmp` do.
    error = fmt::format("not valid JSON at byte {}: {}", position > 0 ? position - 1 : 0,
                        run_json::printable(reason, 200));
    return false;
  }

 private:
  struct Frame {
    json* value;
    std::string key;  // for an object: the key whose value comes next
  };

  // The path of the innermost open container, e.g. "results[2].stats".
  std::string container_path() const {
    std::string path;
    for (std::size_t i = 0; i + 1 < stack_.size(); ++i) {
      // The child of frame i is frame i + 1: the value under the current key, or
      // the last element of an array.
      const json& c = *stack_[i].value;
      if (c.is_object()) {
        run_json::append_key(path, stack_[i].key);
      } else {
        path += "[" + std::to_string(c.size() - 1) + "]";
      }
    }
    return path;
  }

  // The path of the value about to be added, e.g. "results[2].stats.median".
  std::string pending_path() const {
    std::string path = container_path();
    if (stack_.empty()) return path;
    const Frame& top = stack_.back();
    if (top.value->is_object()) {
      run_json::append_key(path, top.key);
    } else {
      path += "[" + std::to_string(top.value->size()) + "]";
    }
    return path;
  }

  json* put(json v) {
    if (stack_.empty()) {
      root = std::move(v);
      return &root;
    }
    json& top = *stack_.back().value;
    if (top.is_array()) {
      top.push_back(std::move(v));
      return &top.back();
    }
    return &(top[stack_.back().key] = std::move(v));
  }

  bool scalar(json v) {
    put(std::move(v));
    return true;
  }

  bool open(json container) {
    if (stack_.size() >= kMaxDepth) {
      error = fmt::format("{}: nested deeper than {} levels",
                          run_json::printable(pending_path(), 80), kMaxDepth);
      return false;
    }
    // A pointer into the parent stays valid: nothing is added to the parent until
    // this container is closed.
    stack_.push_back(Frame{put(std::move(container)), {}});
    return true;
  }

  bool close() {
    stack_.pop_back();
    return true;
  }

  std::vector<Frame> stack_;
};

// Checks "schema" before any other field, so that a foreign or newer file is named
// as such rather than reported as a pile of missing fields.
void check_schema(const json& doc, std::string_view name) {
  if (!doc.is_object()) {
    const std::string_view kind = doc.is_array()     ? "an array"
                                  : doc.is_string()  ? "a string"
                                  : doc.is_number()  ? "a number"
                                  : doc.is_boolean() ? "a boolean"
                                                     : "null";
    run_json::fail(name, "",
                   fmt::format("not a gpuvs run file (the top level is {}, not an object)", kind));
  }
  const auto it = doc.find("schema");
  if (it == doc.end()) run_json::fail(name, "", "not a gpuvs run file (no \"schema\" field)");
  if (!it->is_string()) {
    run_json::fail(name, "schema", fmt::format("expected a string, got {}", it->type_name()));
  }
  const std::string& schema = it->get_ref<const std::string&>();
  if (schema == kRunSchema) return;
  const std::string_view family = kRunSchemaFamily;
  if (schema.compare(0, family.size(), family) != 0) {
    run_json::fail(name, "",
                   fmt::format("not a gpuvs run file (schema {})", run_json::quote(schema)));
  }
  const std::string_view version = std::string_view(schema).substr(family.size());
  // A version is a positive decimal without leading zeros; it is compared as text,
  // so no length can overflow.
  const bool digits = !version.empty() &&
                      version.find_first_not_of("0123456789") == std::string_view::npos &&
                      version.front() != '0';
  if (!digits) {
    run_json::fail(name, "schema",
                   fmt::format("malformed schema version {} (expected {})", run_json::quote(schema),
                               kRunSchema));
  }
  // Here version > 1: the only version 1 spelling was accepted above.
  run_json::fail(name, "",
                 fmt::format("schema {} is newer than this gpuvs reads ({}); upgrade gpuvs",
                             run_json::printable(schema, 64), kRunSchema));
}

}  // namespace

namespace run_json {

json parse_json_document(std::string_view text, std::string_view name) {
  if (text.empty()) fail(name, "", "not valid JSON at byte 0: the file is empty");
  // JSON text has no NUL outside a string's \u0000; readers that stop at one would
  // see another file than the one checked here.
  if (const std::size_t nul = text.find('\0'); nul != std::string_view::npos)
    fail(name, "", fmt::format("not valid JSON at byte {}: a NUL byte", nul));
  DomBuilder dom;
  if (!json::sax_parse(text.begin(), text.end(), &dom))
    fail(name, "", dom.error.empty() ? "not valid JSON" : dom.error);
  return std::move(dom.root);
}

}  // namespace run_json

std::string_view to_string(Status s) {
  switch (s) {
    case Status::kOk:
      return "ok";
    case Status::kInvalid:
      return "invalid";
    case Status::kUnsupported:
      return "unsupported";
    case Status::kError:
      return "error";
  }
  return "error";
}

std::optional<Status> status_from_string(std::string_view s) {
  for (Status st : {Status::kOk, Status::kInvalid, Status::kUnsupported, Status::kError}) {
    if (to_string(st) == s) return st;
  }
  return std::nullopt;
}

std::string to_json_text(const RunFile& run) {
  // `replace`: a string that is not UTF-8 (a Latin-1 hostname, an argv byte) is
  // written with U+FFFD instead of making the whole run unwritable.
  return run_json::run_to_json(run).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) +
         "\n";
}

RunFile parse_run_file(std::string_view text, std::string_view name) {
  const json doc = run_json::parse_json_document(text, name);
  check_schema(doc, name);
  return run_json::run_from_json(doc, name);
}

RunFile load_run_file(const std::filesystem::path& path) {
  const std::string name = path.string();
  return parse_run_file(read_input_file(path, name, "run file", kMaxRunFileBytes), name);
}

void save_run_file(const RunFile& run, const std::filesystem::path& path) {
  const std::string text = to_json_text(run);
  // Never write a file that gpuvs itself would refuse to read back (a NaN written as
  // null, a result id left empty): the caller learns now, with the field path.
  try {
    parse_run_file(text, path.filename().string());
  } catch (const Error& e) {
    throw Error(fmt::format("cannot write {}: the run does not pass validation: {}",
                            run_json::printable(path.string(), 4096), e.what()));
  }
  write_file_atomically(path, text);
}

std::optional<int64_t> int_parameter(const Result& r, const std::string& key) {
  const auto it = r.parameters.find(key);
  if (it == r.parameters.end()) return std::nullopt;
  if (const auto* i = std::get_if<int64_t>(&it->second)) return *i;
  if (const auto* d = std::get_if<double>(&it->second)) return static_cast<int64_t>(*d);
  return std::nullopt;
}

std::optional<double> number_parameter(const Result& r, const std::string& key) {
  const auto it = r.parameters.find(key);
  if (it == r.parameters.end()) return std::nullopt;
  if (const auto* i = std::get_if<int64_t>(&it->second)) return static_cast<double>(*i);
  if (const auto* d = std::get_if<double>(&it->second)) return *d;
  return std::nullopt;
}

std::string param_text(const ParamValue& v) {
  return std::visit(
      [](const auto& x) -> std::string {
        if constexpr (std::is_same_v<std::decay_t<decltype(x)>, bool>) return x ? "true" : "false";
        return fmt::format("{}", x);
      },
      v);
}

}  // namespace gpuvs
