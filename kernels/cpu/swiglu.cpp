#include <algorithm>

#include "kernels/cpu/ops.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/cpu/vector_exp.h"

namespace tandem::cpu {

// silu(gate) * up = gate / (1 + exp(-gate)) * up, 8 values at a time
// (exp8); a row's last partial 8 go through the same operations, padded.
void swiglu(const float* gate_up, int T, int I, float* out) {
  // Rows in parallel when a prefill brings many: exp is the costly part.
  parallel_for(T, static_cast<long>(T) * I >= (1 << 15), [&](int64_t t) {
    const float* gate = gate_up + static_cast<size_t>(t) * 2 * I;
    const float* up = gate + I;
    float* dst = out + static_cast<size_t>(t) * I;
    for (int i = 0; i < I; i += 8) {
      const int count = std::min(8, I - i);
      const Floats8 g = load8_partial(gate + i, count, 0.0f);
      const Floats8 u = load8_partial(up + i, count, 0.0f);
      store8_partial(dst + i, g / (splat(1.0f) + exp8(-g)) * u, count);
    }
  });
}

}  // namespace tandem::cpu
