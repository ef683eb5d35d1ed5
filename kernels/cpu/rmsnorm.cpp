#include <cmath>

#include "kernels/cpu/ops.h"
#include "kernels/cpu/thread_pool.h"

namespace tandem::cpu {
namespace {

// One row: out = row / sqrt(mean(row^2) + eps) * weight. The sum of squares
// is in double: C can be 8k and fp32 accumulation drifts.
void normalize_row(const float* row, const float* weight, int C, float eps, float* out) {
  double sum_sq = 0.0;
  for (int c = 0; c < C; ++c) sum_sq += static_cast<double>(row[c]) * row[c];
  const float inv_rms = static_cast<float>(1.0 / std::sqrt(sum_sq / C + eps));
  for (int c = 0; c < C; ++c) out[c] = row[c] * inv_rms * weight[c];
}

}  // namespace

void rmsnorm(const float* x, const float* weight, int T, int C, float eps, float* out) {
  parallel_for(T, static_cast<long>(T) * C >= (1 << 16), [&](int64_t t) {
    const size_t at = static_cast<size_t>(t) * C;
    normalize_row(x + at, weight, C, eps, out + at);
  });
}

void add_rmsnorm(float* x, const float* y, const float* weight, int T, int C, float eps,
                 float* out) {
  parallel_for(T, static_cast<long>(T) * C >= (1 << 16), [&](int64_t t) {
    const size_t at = static_cast<size_t>(t) * C;
    float* row = x + at;
    // The whole row of y is read before out (which may be y) is written.
    for (int c = 0; c < C; ++c) row[c] += y[at + c];
    normalize_row(row, weight, C, eps, out + at);
  });
}

}  // namespace tandem::cpu
