// Inverse-CDF sampling on the GPU: the twin of cpu::sample_row, one thread
// block per probability row (inverse_cdf.cuh has the search and its rounding
// note). The row never leaves the device; only the token ids do.
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/inverse_cdf.cuh"
#include "kernels/cuda/sampling.h"
#include "kernels/cuda/sampling_device.cuh"

namespace tandem::cuda {
namespace {

using namespace sampling;

__global__ void __launch_bounds__(kThreads)
    sample_kernel(const float* probs, int V, const double* uniforms, int32_t* out) {
  __shared__ DrawStorage s;
  const float* row = probs + static_cast<size_t>(blockIdx.x) * static_cast<size_t>(V);
  const auto entry = [row](int i) { return row[i]; };
  const double u = uniforms[blockIdx.x];
  const RowMass mass = row_mass(entry, V, s.reduce);
  // No positive finite mass (sample_row's error), or a u sample_row would
  // reject (the host checks uniforms; this keeps a bad one from choosing):
  // -1, which the host turns into an Error. Uniform across the block.
  if (!(mass.total > 0.0 && isfinite(mass.total)) || !(u >= 0.0 && u < 1.0)) {
    if (threadIdx.x == 0) out[blockIdx.x] = -1;
    return;
  }
  const int token = inverse_cdf(entry, V, mass, u, s.cdf, s.reduce);
  if (threadIdx.x == 0) out[blockIdx.x] = token;
}

}  // namespace

void sample(const float* probs, int rows, int V, const double* uniforms, int32_t* out,
            cudaStream_t stream) {
  if (rows <= 0 || V <= 0) return;
  sample_kernel<<<rows, kThreads, 0, stream>>>(probs, V, uniforms, out);
  TANDEM_CUDA_CHECK_LAUNCH();
}

}  // namespace tandem::cuda
