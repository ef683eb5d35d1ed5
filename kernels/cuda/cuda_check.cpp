#include "kernels/cuda/cuda_check.h"

#include <string>

#include "common/error.h"

namespace tandem::cuda {

void fail(const char* library, const char* status, const char* call, const char* file,
          int line) {
  // Out-of-memory is the one failure a caller can act on (smaller batch, fewer
  // KV blocks); everything else is a bug or a broken device.
  const std::string text(status);
  const ErrorKind kind = text.find("out of memory") != std::string::npos ||
                                 text.find("ALLOC_FAILED") != std::string::npos
                             ? ErrorKind::out_of_resources
                             : ErrorKind::internal;
  throw Error(kind, std::string(library) + " error " + text + " in " + call + " at " + file +
                        ":" + std::to_string(line));
}

void check(cublasStatus_t status, const char* call, const char* file, int line) {
  if (status != CUBLAS_STATUS_SUCCESS) fail("cuBLAS", cublasGetStatusString(status), call, file, line);
}

}  // namespace tandem::cuda
