// Gumbel-max sampling on the GPU (Coupling::gumbel): the twin of
// cpu::sample_gumbel, one thread block per probability row (the race and its
// bit-exactness note are in gumbel_device.cuh). Only the token ids leave the
// device.
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/gumbel_device.cuh"
#include "kernels/cuda/sampling.h"
#include "kernels/cuda/sampling_device.cuh"

namespace tandem::cuda {
namespace {

using namespace sampling;

__global__ void __launch_bounds__(kThreads)
    gumbel_kernel(const float* probs, int V, const NoiseKey* keys, int32_t* out) {
  __shared__ GumbelStorage s;
  const float* row = probs + static_cast<size_t>(blockIdx.x) * static_cast<size_t>(V);
  const NoiseKey key = keys[blockIdx.x];
  const int token = block_gumbel(row, V, key.seed, key.position, s);
  if (threadIdx.x == 0) out[blockIdx.x] = token;
}

}  // namespace

void sample_gumbel(const float* probs, int rows, int V, const NoiseKey* keys, int32_t* out,
                   cudaStream_t stream) {
  if (rows <= 0 || V <= 0) return;
  gumbel_kernel<<<rows, kThreads, 0, stream>>>(probs, V, keys, out);
  TANDEM_CUDA_CHECK_LAUNCH();
}

}  // namespace tandem::cuda
