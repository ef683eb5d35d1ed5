// embedding: a row gather from a weight table of any dtype (or from f32
// activations), one block per output row.
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_math.cuh"
#include "kernels/cuda/ops.h"

namespace tandem::cuda {
namespace {

template <typename W>
__global__ void embedding_kernel(const int32_t* ids, const W* table, int C, float* out) {
  const int t = blockIdx.x;
  const int32_t id = ids[t];
  float* row = out + static_cast<size_t>(t) * C;
  // A negative id is a token another tensor-parallel rank owns: zeros.
  const W* from = id >= 0 ? table + static_cast<size_t>(id) * C : nullptr;
  for (int c = threadIdx.x; c < C; c += blockDim.x) row[c] = from ? load_as_float(from + c) : 0.0f;
}

template <typename W>
void launch(const int32_t* ids, int T, const void* table, int C, float* out, cudaStream_t stream) {
  embedding_kernel<W><<<T, 256, 0, stream>>>(ids, static_cast<const W*>(table), C, out);
  TANDEM_CUDA_CHECK_LAUNCH();
}

}  // namespace

void embedding(const int32_t* ids, int T, WeightView table, int C, float* out,
               cudaStream_t stream) {
  if (T == 0) return;
  switch (table.dtype) {
    case Dtype::f32: return launch<float>(ids, T, table.data, C, out, stream);
    case Dtype::bf16: return launch<__nv_bfloat16>(ids, T, table.data, C, out, stream);
    case Dtype::f16: return launch<__half>(ids, T, table.data, C, out, stream);
  }
}

}  // namespace tandem::cuda
