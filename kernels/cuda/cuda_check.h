// Turning CUDA, cuBLAS and NCCL status codes into tandem::Error, with the
// call that failed and where. Usable from .cu and .cpp files alike.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

namespace tandem::cuda {

[[noreturn]] void fail(const char* library, const char* status, const char* call,
                       const char* file, int line);

inline void check(cudaError_t status, const char* call, const char* file, int line) {
  if (status != cudaSuccess) fail("CUDA", cudaGetErrorString(status), call, file, line);
}
void check(cublasStatus_t status, const char* call, const char* file, int line);

}  // namespace tandem::cuda

// TANDEM_CUDA_CHECK(cudaMalloc(&p, n)): throws tandem::Error naming the call.
#define TANDEM_CUDA_CHECK(call) ::tandem::cuda::check((call), #call, __FILE__, __LINE__)
// After a kernel launch: reports a bad launch configuration at once.
#define TANDEM_CUDA_CHECK_LAUNCH() TANDEM_CUDA_CHECK(cudaGetLastError())
