#include <cstring>

#include "kernels/cpu/ops.h"

namespace tandem::cpu {

void kv_write(const float* k, const float* v, std::span<const int32_t> slots,
              const PagedKvView& cache) {
  const size_t row = static_cast<size_t>(cache.kv_heads) * cache.head_dim;  // K*D
  for (size_t t = 0; t < slots.size(); ++t) {
    const size_t slot = static_cast<size_t>(slots[t]);
    std::memcpy(cache.k + slot * row, k + t * row, sizeof(float) * row);
    std::memcpy(cache.v + slot * row, v + t * row, sizeof(float) * row);
  }
}

}  // namespace tandem::cpu
