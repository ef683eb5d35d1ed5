// rope: rotate-half rotary embedding, one block per token row. The angle is
// computed in double as on the CPU: positions reach 10^5 and an f32 product
// loses the phase there.
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/ops.h"

namespace tandem::cuda {
namespace {

__global__ void rope_kernel(float* x, const int32_t* positions, int heads, int D,
                            const float* inv_freq) {
  const int t = blockIdx.x;
  const int half = D / 2;
  const double position = positions[t];
  for (int i = threadIdx.x; i < half; i += blockDim.x) {
    double sin_d, cos_d;
    sincos(position * static_cast<double>(inv_freq[i]), &sin_d, &cos_d);
    const float cos_a = static_cast<float>(cos_d), sin_a = static_cast<float>(sin_d);
    for (int h = 0; h < heads; ++h) {
      float* head = x + (static_cast<size_t>(t) * heads + h) * static_cast<size_t>(D);
      const float a = head[i], b = head[i + half];
      head[i] = a * cos_a - b * sin_a;
      head[i + half] = b * cos_a + a * sin_a;
    }
  }
}

}  // namespace

void rope(float* x, const int32_t* positions, int T, int heads, int D, const float* inv_freq,
          cudaStream_t stream) {
  if (T == 0) return;
  rope_kernel<<<T, 64, 0, stream>>>(x, positions, heads, D, inv_freq);
  TANDEM_CUDA_CHECK_LAUNCH();
}

}  // namespace tandem::cuda
