#include <cblas.h>

#include "kernels/cpu/ops.h"

namespace tandem::cpu {
namespace {

// Up to this many rows, a step is memory-bound: the cost is streaming w, not
// the flops. Decode (T = 1) and speculative verification (T = γ+1 per
// sequence) live here, and Theorem 3.8 assumes their cost does not grow with
// T, so the kernel must read w exactly once whatever T is.
constexpr int kSkinnyRows = 16;
// Below this many multiply-adds a parallel region costs more than it saves.
constexpr long kParallelWork = 1 << 16;

// y (T, N) = x (T, Kin) · wᵀ for small T: each row of w is loaded once and
// dotted with every row of x (x stays in cache). Rows of w are split among
// the threads in contiguous ranges, so each thread streams its own part.
void skinny_matmul(const float* x, const float* w, int T, int Kin, int N, float* y) {
  const bool parallel = static_cast<long>(T) * Kin * N >= kParallelWork;
#pragma omp parallel for schedule(static) if (parallel)
  for (int n = 0; n < N; ++n) {
    const float* w_row = w + static_cast<size_t>(n) * Kin;
    for (int t = 0; t < T; ++t) {
      const float* x_row = x + static_cast<size_t>(t) * Kin;
      float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
      for (int k = 0; k < Kin; ++k) sum += w_row[k] * x_row[k];
      y[static_cast<size_t>(t) * N + n] = sum;
    }
  }
}

}  // namespace

void matmul(const float* x, const float* w, const float* bias, int T, int Kin, int N, float* y) {
  if (T <= kSkinnyRows) {
    skinny_matmul(x, w, T, Kin, N, y);
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
