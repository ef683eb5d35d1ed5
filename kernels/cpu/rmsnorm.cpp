#include <cmath>

#include "kernels/cpu/ops.h"

namespace tandem::cpu {

void rmsnorm(const float* x, const float* weight, int T, int C, float eps, float* out) {
#pragma omp parallel for schedule(static) if (static_cast<long>(T) * C >= (1 << 16))
  for (int t = 0; t < T; ++t) {
    const float* row = x + static_cast<size_t>(t) * C;
    float* dst = out + static_cast<size_t>(t) * C;
    // Sum of squares in double: C can be 8k and fp32 accumulation drifts.
    double sum_sq = 0.0;
    for (int c = 0; c < C; ++c) sum_sq += static_cast<double>(row[c]) * row[c];
    const float inv_rms = static_cast<float>(1.0 / std::sqrt(sum_sq / C + eps));
    for (int c = 0; c < C; ++c) dst[c] = row[c] * inv_rms * weight[c];
  }
}

}  // namespace tandem::cpu
