// gpuvs entry point: every error becomes one line on stderr and an exit code.
#include <fmt/format.h>

#include <cstdio>
#include <exception>

#include "cli/app.h"
#include "core/text.h"

int main(int argc, char** argv) {
  try {
    return gpuvs::cli::run_cli(argc, argv);
  } catch (const gpuvs::Error& e) {
    gpuvs::print_text(stderr, "gpuvs: {}\n", e.what());
    return static_cast<int>(e.code());
  } catch (const std::exception& e) {
    gpuvs::print_text(stderr, "gpuvs: internal error: {}\n", e.what());
    return static_cast<int>(gpuvs::ExitCode::kFailure);
  }
}
