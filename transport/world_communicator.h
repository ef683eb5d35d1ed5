// make_world_communicator: the Communicator over every rank of the job.
//
// One call decides the layout from how the process was started: under an
// MPI launcher, MPI is initialized and the world is an MpiCommunicator;
// started directly, every role lives in this process and the world is a
// LocalCommunicator (no MPI_Init, which would be slow and pointless).
// Under MPI, TANDEM_TEST_LINK_DELAY_MS wraps the world in the TEST-ONLY
// DelayedCommunicator (delayed_communicator.h), which holds messages
// between hosts; started directly, there is no other host to delay.
//
//   std::optional<MpiRuntime> mpi;                    // declared first:
//   auto world = make_world_communicator(mpi);        // destroyed last
#pragma once

#include <memory>
#include <optional>

#include "transport/communicator.h"
#include "transport/mpi_runtime.h"

namespace tandem {

// Emplaces `runtime` when MpiRuntime::launched_by_mpi() (it must outlive the
// returned communicator and every one split from it) and leaves it empty
// otherwise. Throws what MpiRuntime's constructor throws.
std::unique_ptr<Communicator> make_world_communicator(std::optional<MpiRuntime>& runtime);

}  // namespace tandem
