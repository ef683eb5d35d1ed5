// embedding: a row gather, also used to gather hidden rows before the LM head.
// A bf16 or f16 table's rows are widened to f32 exactly.
#include <cstring>

#include "kernels/cpu/ops.h"

namespace tandem::cpu {
namespace {

void widen_row(const void* table, Dtype dtype, size_t row, int C, float* out) {
  const uint16_t* narrow = static_cast<const uint16_t*>(table) + row * C;
  if (dtype == Dtype::bf16) {
    for (int c = 0; c < C; ++c) out[c] = bf16_to_f32(narrow[c]);
  } else {
    for (int c = 0; c < C; ++c) out[c] = f16_to_f32(narrow[c]);
  }
}

}  // namespace

void embedding(std::span<const int32_t> token_ids, WeightView table, int C, float* out) {
  // Token ids were checked against V where requests enter the workers; a
  // negative id is a token another tensor-parallel rank owns (zero row).
  for (size_t t = 0; t < token_ids.size(); ++t) {
    float* row = out + t * C;
    const int32_t id = token_ids[t];
    if (id < 0) {
      std::memset(row, 0, sizeof(float) * C);
    } else if (const float* f32 = table.f32()) {
      std::memcpy(row, f32 + static_cast<size_t>(id) * C, sizeof(float) * C);
    } else {
      widen_row(table.data, table.dtype, static_cast<size_t>(id), C, row);
    }
  }
}

}  // namespace tandem::cpu
