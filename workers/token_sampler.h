// pick_token: the target-only way to choose the next token from one logits
// row: argmax for greedy, else standardize (paper §2.2) and draw by the
// session's coupling (kernels/sampling_params.h): rejection draws by inverse
// CDF with the Philox uniform for (seed, position, target_sample); gumbel
// runs the Gumbel-max race with the noise of (seed, position), the draw that
// verification's gumbel blocks make at that position. Plain decoding uses
// it; speculative decoding must reproduce its distribution exactly, and
// under gumbel its tokens.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/backend.h"

namespace tandem {

class TokenSampler {
 public:
  TokenSampler(Backend& backend, int vocab_size);
  // logits_row (V) in backend memory; position: absolute position the chosen
  // token will occupy in its sequence.
  int32_t pick(const float* logits_row, const SamplingParams& params, int64_t position);

 private:
  Backend& backend_;
  int V_;
  Buffer probs_;  // (V) backend memory
};

}  // namespace tandem
