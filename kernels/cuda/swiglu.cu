// swiglu: out = silu(gate) * up, elementwise over (T, I).
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/ops.h"

namespace tandem::cuda {
namespace {

__global__ void swiglu_kernel(const float* gate_up, int I, size_t n, float* out) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const size_t t = i / I, c = i % I;
    const float g = gate_up[t * 2 * I + c];
    const float u = gate_up[t * 2 * I + I + c];
    out[i] = g / (1.0f + expf(-g)) * u;  // silu(g) = g * sigmoid(g)
  }
}

}  // namespace

void swiglu(const float* gate_up, int T, int I, float* out, cudaStream_t stream) {
  const size_t n = static_cast<size_t>(T) * I;
  if (n == 0) return;
  const int blocks = static_cast<int>((n + 255) / 256 < 65536 ? (n + 255) / 256 : 65536);
  swiglu_kernel<<<blocks, 256, 0, stream>>>(gate_up, I, n, out);
  TANDEM_CUDA_CHECK_LAUNCH();
}

}  // namespace tandem::cuda
