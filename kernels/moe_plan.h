// MoePlan: where a sparse mixture-of-experts layer sends each token, and the
// same choices grouped per expert, so that each expert's weights are read
// once per step for all the tokens that chose it (kernels/moe.h runs it).
// Host memory: the expert matmuls are sized by the per-expert row counts.
#pragma once

#include <cstdint>
#include <vector>

namespace tandem {

struct MoePlan {
  int tokens = 0;   // T
  int experts = 0;  // E
  int top_k = 0;    // experts per token

  // (T, top_k), token-major: token t's k-th expert, by descending router
  // probability (equal probabilities: lower expert index first), and its
  // weight (the top-k probabilities, renormalised to sum 1 when asked).
  std::vector<int32_t> expert_ids;
  std::vector<float> weights;

  // The T*top_k choices grouped by expert: expert e owns grouped rows
  // [expert_offsets[e], expert_offsets[e + 1]) (E + 1 entries), within which
  // tokens ascend. row_tokens (T*top_k): the token of each grouped row.
  // row_of_choice (T, top_k): the grouped row holding token t's k-th choice.
  std::vector<int32_t> expert_offsets;
  std::vector<int32_t> row_tokens;
  std::vector<int32_t> row_of_choice;

  int rows() const { return tokens * top_k; }
  int expert_rows(int e) const { return expert_offsets[e + 1] - expert_offsets[e]; }
};

}  // namespace tandem
