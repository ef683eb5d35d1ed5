#include <cmath>

#include "kernels/cpu/ops.h"
#include "kernels/cpu/thread_pool.h"

namespace tandem::cpu {

void swiglu(const float* gate_up, int T, int I, float* out) {
  // Rows in parallel when a prefill brings many: exp is the costly part.
  parallel_for(T, static_cast<long>(T) * I >= (1 << 15), [&](int64_t t) {
    const float* gate = gate_up + static_cast<size_t>(t) * 2 * I;
    const float* up = gate + I;
    float* dst = out + static_cast<size_t>(t) * I;
    for (int i = 0; i < I; ++i) {
      const float g = gate[i];
      dst[i] = g / (1.0f + std::exp(-g)) * up[i];  // silu(g) = g * sigmoid(g)
    }
  });
}

}  // namespace tandem::cpu
