#include "comm/mpi.h"

#include <fmt/format.h>

#include "core/error.h"

#if GPUVS_HAVE_MPI
#include <mpi.h>
#endif

namespace gpuvs::comm {

#if GPUVS_HAVE_MPI

namespace {
void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw Error(fmt::format("MPI: {} failed: {}", what, std::string(text, len)));
}
}  // namespace

bool mpi_available() {
  return true;
}

void mpi_init(int expected_rank, int expected_size) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) check(MPI_Init(nullptr, nullptr), "MPI_Init");
  int rank = 0, size = 0;
  check(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank");
  check(MPI_Comm_size(MPI_COMM_WORLD, &size), "MPI_Comm_size");
  if (rank != expected_rank || size != expected_size) {
    throw Error(fmt::format("MPI says rank {} of {}, the launcher's variables said {} of {}", rank,
                            size, expected_rank, expected_size));
  }
}

std::string mpi_broadcast_from_root(const std::string& text) {
  long long length = static_cast<long long>(text.size());
  check(MPI_Bcast(&length, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD), "MPI_Bcast");
  std::string out = text;
  out.resize(static_cast<size_t>(length));
  check(MPI_Bcast(out.data(), static_cast<int>(length), MPI_CHAR, 0, MPI_COMM_WORLD), "MPI_Bcast");
  return out;
}

void mpi_finalize() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized && !finalized) MPI_Finalize();
}

#else

bool mpi_available() {
  return false;
}

void mpi_init(int, int) {
  throw Error("this gpuvs was built without MPI");
}

std::string mpi_broadcast_from_root(const std::string&) {
  throw Error("this gpuvs was built without MPI");
}

void mpi_finalize() {}

#endif

}  // namespace gpuvs::comm
