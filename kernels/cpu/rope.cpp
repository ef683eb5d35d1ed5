#include <cmath>

#include "kernels/cpu/ops.h"
#include "kernels/cpu/thread_pool.h"

namespace tandem::cpu {

// Hugging Face's rotate-half convention: element i pairs with i + D/2, and
//   x'[i]       = x[i] cos(θ_i) - x[i+D/2] sin(θ_i)
//   x'[i+D/2]   = x[i+D/2] cos(θ_i) + x[i] sin(θ_i),   θ_i = position · inv_freq[i].
void rope(float* x, std::span<const int32_t> positions, int heads, int D, const float* inv_freq) {
  const int half = D / 2;
  const long rows = static_cast<long>(positions.size());
  parallel_for(rows, rows * heads * D >= (1 << 15), [&](int64_t t) {
    // Angles in double: positions reach 10^5 and fp32 loses the phase there.
    const double position = positions[static_cast<size_t>(t)];
    for (int i = 0; i < half; ++i) {
      const double angle = position * static_cast<double>(inv_freq[i]);
      const float cos_a = static_cast<float>(std::cos(angle));
      const float sin_a = static_cast<float>(std::sin(angle));
      for (int h = 0; h < heads; ++h) {
        float* head = x + (static_cast<size_t>(t) * heads + h) * static_cast<size_t>(D);
        const float a = head[i];
        const float b = head[i + half];
        head[i] = a * cos_a - b * sin_a;
        head[i + half] = b * cos_a + a * sin_a;
      }
    }
  });
}

}  // namespace tandem::cpu
