// Which logit rows hold a NaN or an infinity: the twin of
// cpu::find_nonfinite_rows, one thread block per row. Each thread looks at
// a strided share of the row; __syncthreads_or tells the block whether any
// saw one.
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/sampling.h"

namespace tandem::cuda {
namespace {

constexpr int kRowThreads = 256;

__global__ void __launch_bounds__(kRowThreads)
    nonfinite_rows_kernel(const float* x, int V, uint8_t* out) {
  const float* row = x + static_cast<size_t>(blockIdx.x) * static_cast<size_t>(V);
  int bad = 0;
  for (int i = threadIdx.x; i < V; i += kRowThreads) bad |= !isfinite(row[i]);
  bad = __syncthreads_or(bad);
  if (threadIdx.x == 0) out[blockIdx.x] = bad ? 1 : 0;
}

}  // namespace

void find_nonfinite_rows(const float* x, int rows, int V, uint8_t* out, cudaStream_t stream) {
  if (rows <= 0 || V <= 0) return;
  nonfinite_rows_kernel<<<rows, kRowThreads, 0, stream>>>(x, V, out);
  TANDEM_CUDA_CHECK_LAUNCH();
}

}  // namespace tandem::cuda
