// embedding: a row gather, also used to gather hidden rows before the LM head.
#include <cstring>

#include "kernels/cpu/ops.h"

namespace tandem::cpu {

void embedding(std::span<const int32_t> token_ids, const float* table, int C, float* out) {
  // Token ids were checked against V where requests enter the workers; a
  // negative id is a token another tensor-parallel rank owns (zero row).
  for (size_t t = 0; t < token_ids.size(); ++t) {
    float* row = out + t * C;
    if (token_ids[t] < 0) {
      std::memset(row, 0, sizeof(float) * C);
    } else {
      std::memcpy(row, table + static_cast<size_t>(token_ids[t]) * C, sizeof(float) * C);
    }
  }
}

}  // namespace tandem::cpu
