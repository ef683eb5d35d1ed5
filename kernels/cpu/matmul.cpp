#include <cblas.h>

#include "kernels/cpu/ops.h"

namespace tandem::cpu {

void matmul(const float* x, const float* w, const float* bias, int T, int Kin, int N, float* y) {
  if (T == 1) {
    // Decode: a matrix-vector product. OpenBLAS's gemv streams w once, which
    // is all a memory-bound batch-1 step can hope for; its gemm path with M=1
    // packs w first and reads it twice.
    cblas_sgemv(CblasRowMajor, CblasNoTrans, N, Kin, 1.0f, w, Kin, x, 1, 0.0f, y, 1);
  } else {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, N, Kin, 1.0f, x, Kin, w, Kin, 0.0f,
                y, N);
  }
  if (bias) {
    for (int t = 0; t < T; ++t) {
      float* row = y + static_cast<size_t>(t) * N;
      for (int n = 0; n < N; ++n) row[n] += bias[n];
    }
  }
}

}  // namespace tandem::cpu
