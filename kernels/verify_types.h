// The inputs and outputs of batched speculative verification (Algorithm 1),
// shared by every backend. kernels/cpu/verify.h defines the semantics
// exactly (the replay contract); a backend's verify must match it bit for bit.
#pragma once

#include <cstdint>

#include "kernels/sampling_params.h"

namespace tandem {

// One session's speculative block. Rows are standardized, each summing to 1.
struct VerifyBlock {
  int gamma = 0;                     // γ >= 0; 0 is plain decoding: t ~ p_1
  const int32_t* drafted = nullptr;  // (γ) x_1..x_γ, ids in [0, V); may be null if γ = 0
  const float* p = nullptr;          // (γ+1, V) target rows p_1..p_{γ+1}
  const float* q = nullptr;          // (γ, V) draft rows q_1..q_γ, q_j(x_j) > 0;
                                     // nullptr = deterministic drafter (q_j one-hot at x_j)
  int64_t first_position = 0;        // absolute position of x_1 (>= 0)
  uint64_t seed = 0;                 // the session's Philox key
  float lenience = 1.0f;             // l in (0, 1]; 1 = lossless (Appendix A.5)
  // rejection: Algorithm 1. gumbel: keep x_j while it equals the target's
  // Gumbel-max token at its position; q is not read (may be null).
  Coupling coupling = Coupling::rejection;
};

struct VerifyOutcome {
  int accepted = 0;   // n in [0, γ]: x_1..x_n are kept
  int32_t token = 0;  // t, the target's token at position first_position + n
};

// The temperature-0 fast path: the target's argmax at each of γ+1 positions.
struct GreedyBlock {
  int gamma = 0;                           // γ >= 0
  const int32_t* drafted = nullptr;        // (γ) x_1..x_γ; may be null if γ = 0
  const int32_t* target_argmax = nullptr;  // (γ+1) argmax p_1..argmax p_{γ+1}
};

}  // namespace tandem
