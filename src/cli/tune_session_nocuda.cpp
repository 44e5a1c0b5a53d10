// `gpuvs tune`'s measuring path where this build cannot measure: it says so (exit 3
// without CUDA). --show and --cached need no GPU and work in every build.
#include "cli/session.h"
#include "cli/tune_session.h"

namespace gpuvs::cli {

ExitCode run_tune(const GlobalOptions& /*global*/, const TuneOptions& /*options*/) {
  throw_built_without_cuda("tune");
}

}  // namespace gpuvs::cli
