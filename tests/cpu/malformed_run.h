// Helpers of the malformed-run-file tests: valid_full.json edited one field at a
// time, and the check that a file is refused with one line naming the file.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <sstream>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/run_file.h"

namespace gpuvs::malformed_run {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

inline const fs::path kRuns = fs::path(GPUVS_TEST_DATA_DIR) / "runs";

inline std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// valid_full.json changed by `edit` (a realistic file with one bad field).
inline std::string edited(const std::function<void(ojson&)>& edit) {
  ojson doc = ojson::parse(read_bytes(kRuns / "valid_full.json"));
  edit(doc);
  return doc.dump(2);
}

// valid_full.json with the first `from` replaced by `to` (for text no JSON library
// would write: NaN, raw bytes, duplicate keys).
inline std::string replaced(const std::string& from, const std::string& to) {
  std::string text = read_bytes(kRuns / "valid_full.json");
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

// Asserts parse_run_file(text, name) throws a usage error whose message is one line,
// starts with "<name>: " and contains every part. Returns the message.
inline std::string expect_refused(std::string_view text, std::initializer_list<std::string> parts,
                                  const std::string& name = "run.json") {
  try {
    parse_run_file(text, name);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kUsage);
    const std::string msg = e.what();
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\0'), std::string::npos) << msg;
    // Valid UTF-8 whatever the input held: `--json` output may carry the message.
    EXPECT_NO_THROW((void)nlohmann::json(msg).dump()) << msg;
    EXPECT_EQ(msg.rfind(name + ": ", 0), 0u) << msg;
    for (const std::string& part : parts)
      EXPECT_NE(msg.find(part), std::string::npos) << msg;
    EXPECT_LT(msg.size(), 600u) << "messages stay short whatever the input";
    return msg;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not a gpuvs::Error: " << e.what();
    return {};
  }
  ADD_FAILURE() << "accepted: " << text.substr(0, 200);
  return {};
}

}  // namespace gpuvs::malformed_run
