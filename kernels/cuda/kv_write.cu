// kv_write: each new token's K and V rows into their cache slots, one block
// per token.
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/ops.h"

namespace tandem::cuda {
namespace {

__global__ void kv_write_kernel(const float* k, const float* v, const int32_t* slots, int width,
                                float* k_cache, float* v_cache) {
  const int t = blockIdx.x;
  const size_t from = static_cast<size_t>(t) * width;
  const size_t to = static_cast<size_t>(slots[t]) * width;
  for (int i = threadIdx.x; i < width; i += blockDim.x) {
    k_cache[to + i] = k[from + i];
    v_cache[to + i] = v[from + i];
  }
}

}  // namespace

void kv_write(const float* k, const float* v, const int32_t* slots, int T, int width,
              float* k_cache, float* v_cache, cudaStream_t stream) {
  if (T == 0) return;
  kv_write_kernel<<<T, 256, 0, stream>>>(k, v, slots, width, k_cache, v_cache);
  TANDEM_CUDA_CHECK_LAUNCH();
}

}  // namespace tandem::cuda
