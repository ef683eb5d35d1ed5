// moe_combine: each token's top_k expert rows, weighted and summed in k order
// (the CPU twin's order, whatever the batch). One block per token, threads
// over the hidden size.
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/ops.h"

namespace tandem::cuda {
namespace {

__global__ void moe_combine_kernel(const float* expert_rows, const int32_t* row_of_choice,
                                   const float* weights, int top_k, int C, float* out) {
  const size_t t = blockIdx.x;
  for (int c = threadIdx.x; c < C; c += blockDim.x) {
    float sum = 0.0f;
    for (int k = 0; k < top_k; ++k) {
      const size_t at = t * top_k + k;
      sum += weights[at] * expert_rows[static_cast<size_t>(row_of_choice[at]) * C + c];
    }
    out[t * C + c] = sum;
  }
}

}  // namespace

void moe_combine(const float* expert_rows, const int32_t* row_of_choice, const float* weights,
                 int T, int top_k, int C, float* out, cudaStream_t stream) {
  if (T == 0 || C == 0) return;
  moe_combine_kernel<<<T, 256, 0, stream>>>(expert_rows, row_of_choice, weights, top_k, C, out);
  TANDEM_CUDA_CHECK_LAUNCH();
}

}  // namespace tandem::cuda
