// The check every loader test makes of a refusal: a gpuvs::UsageError (exit 2) whose
// message is one line of valid UTF-8.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace gpuvs_test {

// The message of the UsageError `load` throws; a failure when it throws nothing,
// something else, or a message that is not one line of UTF-8.
inline std::string usage_error_of(const std::function<void()>& load) {
  try {
    load();
  } catch (const gpuvs::UsageError& e) {
    EXPECT_EQ(e.code(), gpuvs::ExitCode::kUsage);
    const std::string msg = e.what();
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    EXPECT_NO_THROW((void)nlohmann::json(msg).dump()) << "the message itself is UTF-8";
    return msg;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not a UsageError: " << e.what();
    return {};
  }
  ADD_FAILURE() << "accepted";
  return {};
}

}  // namespace gpuvs_test
