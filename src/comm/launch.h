// How this process was started for a collectives run, read from the command line
// and the launcher's environment (docs/collectives.md, "Launch modes").
//
// One process driving every local GPU is the default. Several processes (one per
// GPU) need a rank, a world size and a way to meet:
//  - mpirun / srun with an MPI build: MPI broadcasts rank 0's control address;
//  - NCCL_COMM_ID=host:port in every rank's environment: rank 0's control
//    connection listens on port + 1 of that host;
//  - --rendezvous file:PATH on a filesystem every rank sees: rank 0 writes its
//    control address there.
// Rank and size come from --rank/--ranks, else the launcher's variables (Open MPI,
// MPICH/PMI, Slurm). Pure logic over an environment lookup, so it is unit-tested.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuvs::comm {

enum class LaunchMode { kSingleProcess, kMpi, kNcclCommId, kFile };

// "single-process" | "mpi" | "nccl-comm-id" | "file" (the run file's comm.launch)
std::string_view to_string(LaunchMode mode);

struct LaunchRequest {
  std::optional<int> rank;   // --rank
  std::optional<int> ranks;  // --ranks
  std::string rendezvous;    // --rendezvous: "file:PATH" or empty
};

struct Launch {
  LaunchMode mode = LaunchMode::kSingleProcess;
  int rank = 0;
  int world_size = 1;
  std::optional<int> local_rank;          // from the launcher, when it says
  std::optional<int> local_size;          // ranks on this host, when the launcher says
  std::string source;                     // where rank and size came from: "--rank/--ranks",
                                          // "Open MPI", "PMI", "Slurm", "" when single
  std::filesystem::path rendezvous_file;  // kFile
  std::string nccl_comm_id;               // kNcclCommId: "host:port"

  bool multi_process() const { return world_size > 1; }
};

using EnvLookup = std::function<std::optional<std::string>(std::string_view)>;

// The process environment.
EnvLookup process_env();

// Rank, size, local rank and size and the rendezvous path from the options and the
// launcher's variables, without deciding how the ranks meet (mode kSingleProcess):
// enough for ranks that each measure their own node and never talk. Throws
// UsageError for contradictions (--rank without --ranks, a rank out of range, a
// malformed rendezvous).
Launch detect_ranks(const LaunchRequest& request, const EnvLookup& env);

// Decide the launch. Throws UsageError for contradictions (--rank without --ranks, a
// rank out of range, an unknown rendezvous) and when several ranks have no way to
// meet (a launcher's ranks, no MPI in this build, no NCCL_COMM_ID, no rendezvous).
Launch detect_launch(const LaunchRequest& request, const EnvLookup& env, bool have_mpi);

// Slurm's tasks on this node from SLURM_NTASKS_PER_NODE or SLURM_STEP_TASKS_PER_NODE
// ("4", "4(x16)"): nullopt where it is not one count for every node ("2(x3),1").
std::optional<int> slurm_tasks_per_node(const std::optional<std::string>& text);

// The GPUs one rank measures on its own node: with several ranks on the node (the
// launcher says how many), the GPU of its local rank (local_rank % visible);
// otherwise `requested` (the --gpu list, every GPU by default). A single process
// gets `requested`.
std::vector<int> rank_devices(const Launch& launch, int visible, const std::vector<int>& requested);

// Every NCCL_* variable of the environment, sorted (recorded in the run file).
std::map<std::string, std::string> nccl_environment();

}  // namespace gpuvs::comm
