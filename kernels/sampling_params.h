// SamplingParams: how one session turns logits into a token.
#pragma once

#include <cstdint>

namespace tandem {

struct SamplingParams {
  float temperature = 1.0f;  // 0 = greedy (argmax, no probability rows)
  int top_k = 0;             // keep the k most likely tokens; 0 = off
  float top_p = 1.0f;        // keep the smallest set reaching mass top_p; 1 = off
  uint64_t seed = 0;         // Philox key: same seed, same tokens

  bool greedy() const { return temperature == 0.0f; }
};

}  // namespace tandem
