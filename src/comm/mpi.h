// The little MPI that gpuvs uses: initialise under mpirun/srun and broadcast rank 0's
// control address. MPI is optional at build time (GPUVS_HAVE_MPI); without it
// mpi_available() is false and the other calls throw.
#pragma once

#include <string>

namespace gpuvs::comm {

bool mpi_available();
// MPI_Init once; checks that MPI's rank and size match what the launcher's
// variables said (a mismatch means two launchers disagree: stop).
void mpi_init(int expected_rank, int expected_size);
// Rank 0's text on every rank (MPI_Bcast of its length, then its bytes).
std::string mpi_broadcast_from_root(const std::string& text);
// MPI_Finalize after an orderly end. Never called after an abort: a dead peer would
// make it wait; mpirun then reports the exit, which is what should happen.
void mpi_finalize();

}  // namespace gpuvs::comm
