// check_mpi (see mpi_error.h).
#include "transport/mpi_error.h"

#include <mpi.h>

#include "common/error.h"

namespace tandem {

void check_mpi(int code, const std::string& operation) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) length = 0;
  const std::string reason = length > 0 ? std::string(text, static_cast<size_t>(length))
                                        : "MPI error code " + std::to_string(code);
  throw Error(ErrorKind::internal, operation + " failed: " + reason);
}

}  // namespace tandem
