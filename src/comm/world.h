// The ranks of a multi-process collectives run, met and watched (docs/collectives.md).
//
// join_world() turns a Launch into a World: rank 0 opens the control connection
// (comm/control.h) and publishes its address the way the launch says (MPI broadcast,
// NCCL_COMM_ID's port + 1, or a rendezvous file); every rank connects, says hello,
// learns its local rank and picks its GPU. The World then hands out NCCL unique ids
// (one per communicator, from rank 0) and ends with an orderly goodbye, so a rank
// that vanishes is told apart from one that finished.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "comm/control.h"
#include "comm/launch.h"

namespace gpuvs::comm {

struct World {
  Launch launch;
  std::unique_ptr<ControlPlane> control;
  std::vector<PeerInfo> peers;  // index = rank
  int device = 0;               // this rank's CUDA device
  double timeout_s = 60;
  std::filesystem::path rendezvous_written;  // rank 0 removes it at the end

  World() = default;
  ~World();
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  int rank() const { return launch.rank; }
  int size() const { return launch.world_size; }
  // Rank 0 makes a fresh NCCL unique id and every rank receives it.
  std::string share_unique_id();
  // Orderly end; returns the ranks that did not finish (empty when all did).
  std::vector<int> finish();
};

// Meets the other ranks; throws Error (naming who is missing) on timeout.
// `visible_devices`: CUDA devices this process sees.
std::unique_ptr<World> join_world(const Launch& launch, double timeout_s, int visible_devices);

// Whether this build can use MPI for the rendezvous.
bool built_with_mpi();

}  // namespace gpuvs::comm
