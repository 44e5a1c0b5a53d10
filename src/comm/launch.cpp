#include "comm/launch.h"

#include <fmt/format.h>

#include <charconv>
#include <cstdlib>
#include <cstring>

#include "comm/control.h"
#include "core/error.h"

extern char** environ;

namespace gpuvs::comm {

namespace {

std::optional<int> parse_int(const std::optional<std::string>& text) {
  if (!text) return std::nullopt;
  int v = 0;
  const char* end = text->data() + text->size();
  auto [p, ec] = std::from_chars(text->data(), end, v);
  if (ec != std::errc() || p != end) return std::nullopt;
  return v;
}

// A launcher's rank and size variables, in the order we trust them.
struct LauncherVars {
  const char* name;
  const char* rank;
  const char* size;
  const char* local_rank;
  const char* local_size;  // nullptr: Slurm's, read by slurm_tasks_per_node
  bool mpi;                // MPI_Init works under this launcher
};
constexpr LauncherVars kLaunchers[] = {
    {"Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
     "OMPI_COMM_WORLD_LOCAL_SIZE", true},
    {"PMI", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS", true},
    // SLURM_NTASKS is also set inside an sbatch script, where one process runs: only
    // a step started by srun has SLURM_STEP_NUM_TASKS.
    {"Slurm", "SLURM_PROCID", "SLURM_STEP_NUM_TASKS", "SLURM_LOCALID", nullptr, true},
};

}  // namespace

std::string_view to_string(LaunchMode mode) {
  switch (mode) {
    case LaunchMode::kSingleProcess:
      return "single-process";
    case LaunchMode::kMpi:
      return "mpi";
    case LaunchMode::kNcclCommId:
      return "nccl-comm-id";
    case LaunchMode::kFile:
      return "file";
  }
  return "single-process";
}

EnvLookup process_env() {
  return [](std::string_view name) -> std::optional<std::string> {
    const char* v = std::getenv(std::string(name).c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
}

std::optional<int> slurm_tasks_per_node(const std::optional<std::string>& text) {
  if (!text) return std::nullopt;
  const std::string& t = *text;
  const size_t digits = t.find_first_not_of("0123456789");
  const std::string head = t.substr(0, digits);
  const auto n = parse_int(head.empty() ? std::nullopt : std::optional<std::string>(head));
  if (!n || *n < 1) return std::nullopt;
  if (digits == std::string::npos) return n;
  // "4(x16)": four on each of 16 nodes; anything after it is another count.
  const std::string rest = t.substr(digits);
  if (rest.size() > 3 && rest.rfind("(x", 0) == 0 && rest.back() == ')' &&
      rest.find_first_not_of("0123456789", 2) == rest.size() - 1)
    return n;
  return std::nullopt;
}

std::vector<int> rank_devices(const Launch& launch, int visible,
                              const std::vector<int>& requested) {
  if (!launch.multi_process() || visible < 1 || !launch.local_size || *launch.local_size <= 1 ||
      !launch.local_rank)
    return requested;
  return {*launch.local_rank % visible};
}

Launch detect_ranks(const LaunchRequest& request, const EnvLookup& env) {
  Launch launch;
  if (request.rank.has_value() != request.ranks.has_value()) {
    throw UsageError("--rank and --ranks go together: give both (e.g. --rank 1 --ranks 2)");
  }
  if (request.ranks) {
    launch.rank = *request.rank;
    launch.world_size = *request.ranks;
    launch.source = "--rank/--ranks";
  } else {
    for (const LauncherVars& l : kLaunchers) {
      const auto rank = parse_int(env(l.rank));
      const auto size = parse_int(env(l.size));
      if (!rank || !size) continue;
      launch.rank = *rank;
      launch.world_size = *size;
      launch.local_rank = parse_int(env(l.local_rank));
      launch.local_size = l.local_size != nullptr
                              ? parse_int(env(l.local_size))
                              : slurm_tasks_per_node(env("SLURM_NTASKS_PER_NODE"));
      if (l.local_size == nullptr && !launch.local_size)
        launch.local_size = slurm_tasks_per_node(env("SLURM_STEP_TASKS_PER_NODE"));
      launch.source = l.name;
      break;
    }
  }
  if (launch.world_size < 1) {
    throw UsageError(fmt::format("world size {} (from {}) must be at least 1", launch.world_size,
                                 launch.source));
  }
  if (launch.rank < 0 || launch.rank >= launch.world_size) {
    throw UsageError(fmt::format("rank {} (from {}) is outside 0..{}", launch.rank, launch.source,
                                 launch.world_size - 1));
  }

  if (!request.rendezvous.empty()) {
    constexpr std::string_view kFile = "file:";
    if (request.rendezvous.rfind(kFile, 0) != 0 || request.rendezvous.size() == kFile.size()) {
      throw UsageError(fmt::format("--rendezvous '{}': expected file:PATH (a path every rank sees)",
                                   request.rendezvous));
    }
    launch.rendezvous_file = request.rendezvous.substr(kFile.size());
  }
  if (!launch.multi_process()) {
    launch.source.clear();
    launch.local_rank.reset();
    launch.local_size.reset();
  }
  return launch;
}

Launch detect_launch(const LaunchRequest& request, const EnvLookup& env, bool have_mpi) {
  Launch launch = detect_ranks(request, env);
  // one process, every local GPU; a rendezvous has nothing to do
  if (!launch.multi_process()) return launch;
  bool launcher_has_mpi = false;
  for (const LauncherVars& l : kLaunchers)
    if (launch.source == l.name) launcher_has_mpi = l.mpi;

  if (!launch.rendezvous_file.empty()) {
    launch.mode = LaunchMode::kFile;
  } else if (const auto id = env("NCCL_COMM_ID")) {
    if (!parse_control_address(*id)) {
      throw UsageError(fmt::format("NCCL_COMM_ID '{}': expected host:port", *id));
    }
    launch.mode = LaunchMode::kNcclCommId;
    launch.nccl_comm_id = *id;
  } else if (have_mpi && launcher_has_mpi) {
    launch.mode = LaunchMode::kMpi;
  } else {
    throw UsageError(fmt::format(
        "{} ranks (from {}) but no way for them to meet: {}; pass --rendezvous file:PATH "
        "(a path on a filesystem every rank sees) or set NCCL_COMM_ID=host:port for every rank",
        launch.world_size, launch.source,
        have_mpi ? "MPI only helps under mpirun or srun" : "this gpuvs was built without MPI"));
  }
  return launch;
}

std::map<std::string, std::string> nccl_environment() {
  std::map<std::string, std::string> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (eq == nullptr || std::strncmp(*e, "NCCL_", 5) != 0) continue;
    out.emplace(std::string(*e, static_cast<size_t>(eq - *e)), std::string(eq + 1));
  }
  return out;
}

}  // namespace gpuvs::comm
