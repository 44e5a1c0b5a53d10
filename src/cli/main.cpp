// gpuvs entry point: every error becomes one line on stderr and an exit code.
#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <exception>
#include <string>
#include <string_view>
#include <system_error>

#include "cli/app.h"
#include "core/text.h"

namespace {

// What was printed must have reached stdout (a full disk, a closed pipe, /dev/full):
// a command whose output was lost has failed, and says why.
int checked_stdout(int code) {
  errno = 0;
  if (std::fflush(stdout) == 0 && !std::ferror(stdout)) return code;
  const int err = errno;
  fmt::print(stderr, "gpuvs: cannot write to standard output{}\n",
             err != 0 ? ": " + std::generic_category().message(err) : std::string());
  return code == 0 ? static_cast<int>(gpuvs::ExitCode::kFailure) : code;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return checked_stdout(gpuvs::cli::run_cli(argc, argv));
  } catch (const gpuvs::Error& e) {
    gpuvs::print_text(stderr, "gpuvs: {}\n", e.what());
    return checked_stdout(static_cast<int>(e.code()));
  } catch (const std::system_error& e) {
    // fmt::print reports a failed write (of a long output, before any flush) so.
    if (std::string_view(e.what()).starts_with("cannot write to file")) {
      fmt::print(stderr, "gpuvs: cannot write to standard output: {}\n", e.code().message());
      return static_cast<int>(gpuvs::ExitCode::kFailure);
    }
    gpuvs::print_text(stderr, "gpuvs: internal error: {}\n", e.what());
    return static_cast<int>(gpuvs::ExitCode::kFailure);
  } catch (const std::exception& e) {
    gpuvs::print_text(stderr, "gpuvs: internal error: {}\n", e.what());
    return static_cast<int>(gpuvs::ExitCode::kFailure);
  }
}
