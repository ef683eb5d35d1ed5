// Elementwise ops: the residual add, the bias add after a GEMM, and the f32
// → bf16/f16 cast of a GEMM's input.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/ops.h"

namespace tandem::cuda {
namespace {

constexpr int kThreads = 256;

int grid_for(size_t n) {
  const size_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<int>(blocks < 65536 ? blocks : 65536);
}

#define TANDEM_GRID_STRIDE_LOOP(i, n)                                                       \
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < (n); \
       i += static_cast<size_t>(gridDim.x) * blockDim.x)

__global__ void add_kernel(float* x, const float* y, size_t n) {
  TANDEM_GRID_STRIDE_LOOP(i, n) x[i] += y[i];
}

__global__ void add_bias_kernel(float* y, const float* bias, int N, size_t n) {
  TANDEM_GRID_STRIDE_LOOP(i, n) y[i] += bias[i % N];
}

// The intrinsics round to nearest even, as f32_to_bf16 / f32_to_f16 do.
__global__ void to_bf16_kernel(const float* x, size_t n, __nv_bfloat16* out) {
  TANDEM_GRID_STRIDE_LOOP(i, n) out[i] = __float2bfloat16_rn(x[i]);
}
__global__ void to_f16_kernel(const float* x, size_t n, __half* out) {
  TANDEM_GRID_STRIDE_LOOP(i, n) out[i] = __float2half_rn(x[i]);
}

}  // namespace

void add(float* x, const float* y, size_t n, cudaStream_t stream) {
  if (n == 0) return;
  add_kernel<<<grid_for(n), kThreads, 0, stream>>>(x, y, n);
  TANDEM_CUDA_CHECK_LAUNCH();
}

void add_bias(float* y, const float* bias, int T, int N, cudaStream_t stream) {
  const size_t n = static_cast<size_t>(T) * N;
  if (n == 0) return;
  add_bias_kernel<<<grid_for(n), kThreads, 0, stream>>>(y, bias, N, n);
  TANDEM_CUDA_CHECK_LAUNCH();
}

void to_narrow(const float* x, size_t n, Dtype dtype, void* out, cudaStream_t stream) {
  if (n == 0) return;
  if (dtype == Dtype::bf16) {
    to_bf16_kernel<<<grid_for(n), kThreads, 0, stream>>>(x, n, static_cast<__nv_bfloat16*>(out));
  } else {
    to_f16_kernel<<<grid_for(n), kThreads, 0, stream>>>(x, n, static_cast<__half*>(out));
  }
  TANDEM_CUDA_CHECK_LAUNCH();
}

}  // namespace tandem::cuda
