// Row argmax on the GPU: the twin of cpu::argmax (ties to the lowest index,
// NaN ranked as -inf), one thread block per row. Each thread keeps the best
// (value, index) key of its entries; one block-wide max of the keys decides
// (sampling_device.cuh: the key's order is exactly the CPU's).
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/sampling.h"
#include "kernels/cuda/sampling_device.cuh"

namespace tandem::cuda {
namespace {

using namespace sampling;

__global__ void __launch_bounds__(kThreads) argmax_kernel(const float* logits, int V, int32_t* out) {
  __shared__ ReduceStorage s;
  const float* row = logits + static_cast<size_t>(blockIdx.x) * static_cast<size_t>(V);
  const int best = block_argmax(row, V, s);
  if (threadIdx.x == 0) out[blockIdx.x] = best;
}

}  // namespace

void argmax(const float* logits, int rows, int V, int32_t* out, cudaStream_t stream) {
  if (rows <= 0 || V <= 0) return;
  argmax_kernel<<<rows, kThreads, 0, stream>>>(logits, V, out);
  TANDEM_CUDA_CHECK_LAUNCH();
}

}  // namespace tandem::cuda
