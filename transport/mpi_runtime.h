// MpiRuntime: MPI_Init_thread and MPI_Finalize as one RAII object.
//
// A process holds at most one, for as long as it uses MPI: every
// MpiCommunicator must be destroyed before it (declare the runtime first).
// MPI is initialized with MPI_THREAD_SERIALIZED because the engine talks
// MPI from its own thread while the main thread only initializes and
// finalizes; MPI_THREAD_FUNNELED (main thread only) would not allow that.
// Move-only; a moved-from runtime finalizes nothing.
#pragma once

#include <memory>

#include "transport/communicator.h"

namespace tandem {

class MpiRuntime {
 public:
  // True when an MPI or Slurm launcher started this process (it set
  // OMPI_COMM_WORLD_SIZE, PMIX_RANK, PMI_SIZE or PMI_RANK). Without one,
  // MPI_Init would make a singleton job, slowly, for nothing.
  static bool launched_by_mpi();

  // Initializes MPI. Throws Error(unsupported) if the MPI library cannot
  // give MPI_THREAD_SERIALIZED (after finalizing it again), and
  // Error(internal) if MPI was already initialized in this process.
  MpiRuntime();
  ~MpiRuntime();
  MpiRuntime(const MpiRuntime&) = delete;
  MpiRuntime& operator=(const MpiRuntime&) = delete;
  MpiRuntime(MpiRuntime&& other) noexcept;
  MpiRuntime& operator=(MpiRuntime&& other) noexcept;

  // An MpiCommunicator over a duplicate of MPI_COMM_WORLD (a dup, so our
  // messages never match another library's on the world communicator).
  // Collective: every rank calls it.
  std::unique_ptr<Communicator> world() const;

 private:
  bool owns_ = true;
};

}  // namespace tandem
