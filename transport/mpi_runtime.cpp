// MpiRuntime (see mpi_runtime.h).
#include "transport/mpi_runtime.h"

#include <mpi.h>

#include <cstdlib>
#include <string>
#include <utility>

#include "common/error.h"
#include "transport/mpi_communicator.h"
#include "transport/mpi_error.h"

namespace tandem {

namespace {

const char* thread_level_name(int level) {
  if (level == MPI_THREAD_SINGLE) return "MPI_THREAD_SINGLE";
  if (level == MPI_THREAD_FUNNELED) return "MPI_THREAD_FUNNELED";
  if (level == MPI_THREAD_SERIALIZED) return "MPI_THREAD_SERIALIZED";
  if (level == MPI_THREAD_MULTIPLE) return "MPI_THREAD_MULTIPLE";
  return "an unknown thread level";
}

}  // namespace

bool MpiRuntime::launched_by_mpi() {
  // Open MPI's mpirun, PMIx launchers (srun --mpi=pmix) and PMI-1/2
  // launchers (srun, MPICH's hydra) each set one of these in every rank.
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE", "PMI_RANK"}) {
    if (std::getenv(name) != nullptr) return true;
  }
  return false;
}

MpiRuntime::MpiRuntime() {
  int initialized = 0;
  check_mpi(MPI_Initialized(&initialized), "MPI_Initialized");
  require(!initialized, ErrorKind::internal, "MpiRuntime: MPI is already initialized in this process");
  int provided = MPI_THREAD_SINGLE;
  check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
  if (provided < MPI_THREAD_SERIALIZED) {
    MPI_Finalize();
    throw Error(ErrorKind::unsupported,
                std::string("the MPI library provides only ") + thread_level_name(provided) +
                    ", Tandem needs MPI_THREAD_SERIALIZED; use an MPI built with thread support");
  }
  // Errors on MPI_COMM_WORLD (and on groups, which MPI reports there)
  // return instead of killing the process, like those on our communicators.
  check_mpi(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
}

MpiRuntime::~MpiRuntime() {
  if (owns_) MPI_Finalize();
}

MpiRuntime::MpiRuntime(MpiRuntime&& other) noexcept : owns_(std::exchange(other.owns_, false)) {}

MpiRuntime& MpiRuntime::operator=(MpiRuntime&& other) noexcept {
  if (this != &other) {
    if (owns_) MPI_Finalize();
    owns_ = std::exchange(other.owns_, false);
  }
  return *this;
}

std::unique_ptr<Communicator> MpiRuntime::world() const {
  require(owns_, ErrorKind::internal, "MpiRuntime::world on a moved-from runtime");
  MPI_Comm comm = MPI_COMM_NULL;
  check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &comm), "MPI_Comm_dup of MPI_COMM_WORLD");
  return std::make_unique<MpiCommunicator>(comm);
}

}  // namespace tandem
