// The world communicator of the MPI test binaries, made by main() and
// used by every case.
#pragma once

#include <memory>

#include "transport/communicator.h"

namespace tandem::test_support {

void set_mpi_world(std::unique_ptr<Communicator> world);
Communicator& mpi_world();

}  // namespace tandem::test_support
