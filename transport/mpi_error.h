// check_mpi: turns an MPI error code into a tandem::Error.
//
// Our communicators set MPI_ERRORS_RETURN, so a failed call (a peer that
// died, a truncated receive) returns a code instead of killing the process;
// the caller decides whether to end the job. The message names the
// operation and the peer so that a log line says which link failed.
#pragma once

#include <string>

namespace tandem {

// Throws Error(internal, "<operation>: <MPI's text>") unless code is
// MPI_SUCCESS. operation says what and with whom: "MPI_Send to rank 3".
void check_mpi(int code, const std::string& operation);

}  // namespace tandem
