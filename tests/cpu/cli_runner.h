// Runs the gpuvs binary (GPUVS_BIN) as a user would, with its stdout, stderr and
// exit code, for the CLI tests of every command.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace gpuvs_test {

struct CliOutcome {
  int code = -1;  // exit code; -1 when it did not exit normally
  std::string out;
  std::string err;
};

// `args` is appended to the binary's path as shell words.
inline CliOutcome run_gpuvs(const std::string& args) {
  static std::atomic<int> counter{0};
  const auto err_path =
      std::filesystem::temp_directory_path() /
      ("gpuvs_cli_err_" + std::to_string(::getpid()) + "_" + std::to_string(counter++) + ".txt");
  const std::string cmd = std::string(GPUVS_BIN) + " " + args + " 2>" + err_path.string();
  CliOutcome o;
  FILE* pipe = ::popen(cmd.c_str(), "r");
  if (!pipe) return o;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0)
    o.out.append(buf.data(), n);
  const int status = ::pclose(pipe);
  o.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream err(err_path);
  std::stringstream ss;
  ss << err.rdbuf();
  o.err = ss.str();
  std::filesystem::remove(err_path);
  return o;
}

}  // namespace gpuvs_test
