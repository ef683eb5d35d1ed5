// rmsnorm: one block per row; the sum of squares in double, as the CPU twin
// does (C reaches 8k and an f32 sum drifts).
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_math.cuh"
#include "kernels/cuda/ops.h"

namespace tandem::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void rmsnorm_kernel(const float* x, const float* weight, int C, float eps, float* out) {
  __shared__ double scratch[kWarp];
  const float* row = x + static_cast<size_t>(blockIdx.x) * C;
  float* dst = out + static_cast<size_t>(blockIdx.x) * C;
  double sum_sq = 0.0;
  for (int c = threadIdx.x; c < C; c += blockDim.x) sum_sq += static_cast<double>(row[c]) * row[c];
  sum_sq = block_sum(sum_sq, scratch);
  const float inv_rms = static_cast<float>(1.0 / sqrt(sum_sq / C + eps));
  // out may alias x: every thread has read its elements before block_sum's
  // barriers, and each writes only the elements it read.
  for (int c = threadIdx.x; c < C; c += blockDim.x) dst[c] = row[c] * inv_rms * weight[c];
}

}  // namespace

void rmsnorm(const float* x, const float* weight, int T, int C, float eps, float* out,
             cudaStream_t stream) {
  if (T == 0) return;
  rmsnorm_kernel<<<T, kThreads, 0, stream>>>(x, weight, C, eps, out);
  TANDEM_CUDA_CHECK_LAUNCH();
}

}  // namespace tandem::cuda
