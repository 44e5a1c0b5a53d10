// gpuvs::Error carries a message and the exit code that `main` turns it into.
// Exit codes are the contract of docs/design.md: 0 ok, 1 failure or failed check,
// 2 usage error, 3 could not run (no GPU, no driver), 4 finished with invalid results
// or results taken during a thermal or hardware slowdown (power capping is not one).
#pragma once

#include <stdexcept>
#include <string>

namespace gpuvs {

enum class ExitCode : int {
  kOk = 0,
  kFailure = 1,
  kUsage = 2,
  kCannotRun = 3,
  kDegraded = 4,
};

class Error : public std::runtime_error {
 public:
  explicit Error(std::string message, ExitCode code = ExitCode::kFailure)
      : std::runtime_error(std::move(message)), code_(code) {}
  ExitCode code() const { return code_; }

 private:
  ExitCode code_;
};

// A user handed us something wrong (flag, file, name): exit 2.
class UsageError : public Error {
 public:
  explicit UsageError(std::string message) : Error(std::move(message), ExitCode::kUsage) {}
};

// The machine cannot run this (no GPU, no driver, built without CUDA): exit 3.
class CannotRunError : public Error {
 public:
  explicit CannotRunError(std::string message) : Error(std::move(message), ExitCode::kCannotRun) {}
};

// The GPU ran out of memory (cudaMalloc, or a library's own allocation). Distinct
// so that a search for the largest batch can catch it, free everything and retry.
class OutOfMemoryError : public Error {
 public:
  explicit OutOfMemoryError(std::string message) : Error(std::move(message)) {}
};

}  // namespace gpuvs
