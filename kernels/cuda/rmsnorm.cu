// rmsnorm, alone or fused with the residual add before it: one block per
// row; the sum of squares in double, as the CPU twin does (C reaches 8k and
// an f32 sum drifts).
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_math.cuh"
#include "kernels/cuda/ops.h"

namespace tandem::cuda {
namespace {

constexpr int kThreads = 256;

// Each thread writes only elements it read itself, before block_sum's
// barriers: so out may alias x (rmsnorm) or y (add_rmsnorm).
__device__ void normalize_row(const float* row, const float* weight, int C, float eps,
                              double sum_sq, float* dst) {
  __shared__ double scratch[kWarp];
  sum_sq = block_sum(sum_sq, scratch);
  const float inv_rms = static_cast<float>(1.0 / sqrt(sum_sq / C + eps));
  for (int c = threadIdx.x; c < C; c += blockDim.x) dst[c] = row[c] * inv_rms * weight[c];
}

__global__ void rmsnorm_kernel(const float* x, const float* weight, int C, float eps, float* out) {
  const size_t at = static_cast<size_t>(blockIdx.x) * C;
  const float* row = x + at;
  double sum_sq = 0.0;
  for (int c = threadIdx.x; c < C; c += blockDim.x) sum_sq += static_cast<double>(row[c]) * row[c];
  normalize_row(row, weight, C, eps, sum_sq, out + at);
}

__global__ void add_rmsnorm_kernel(float* x, const float* y, const float* weight, int C, float eps,
                                   float* out) {
  const size_t at = static_cast<size_t>(blockIdx.x) * C;
  float* row = x + at;
  double sum_sq = 0.0;
  for (int c = threadIdx.x; c < C; c += blockDim.x) {
    const float sum = row[c] + y[at + c];  // rounded to f32 as add() rounds it
    row[c] = sum;
    sum_sq += static_cast<double>(sum) * sum;
  }
  normalize_row(row, weight, C, eps, sum_sq, out + at);
}

}  // namespace

void rmsnorm(const float* x, const float* weight, int T, int C, float eps, float* out,
             cudaStream_t stream) {
  if (T == 0) return;
  rmsnorm_kernel<<<T, kThreads, 0, stream>>>(x, weight, C, eps, out);
  TANDEM_CUDA_CHECK_LAUNCH();
}

void add_rmsnorm(float* x, const float* y, const float* weight, int T, int C, float eps,
                 float* out, cudaStream_t stream) {
  if (T == 0) return;
  add_rmsnorm_kernel<<<T, kThreads, 0, stream>>>(x, y, weight, C, eps, out);
  TANDEM_CUDA_CHECK_LAUNCH();
}

}  // namespace tandem::cuda
