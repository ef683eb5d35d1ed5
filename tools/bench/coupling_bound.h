// What theory says `tandem-bench coupling` should measure: per position, the
// acceptance of the two couplings (kernels/sampling_params.h) computed from
// the exact target and draft rows p and q.
//   rejection accepts   β = Σ_v min(p(v), q(v)) = 1 − TV(p, q)
//   the Gumbel race     agrees with probability ≥ β / (2 − β) = (1 − TV) / (1 + TV)
//                       (Daliri, Musco, Suresh 2024), and exactly with
//                       Σ_v 1 / Σ_u max(p(u)/p(v), q(u)/q(v))
// (each token's exponential E_v is shared; v wins both races iff every other
// E_u exceeds E_v times that max, and E_v ~ Exp(1) integrates to the ratio).
// The bench scores these along the plain seeded outputs; the engine's
// measured α is then compared with them.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "coordinator/models/model_flags.h"
#include "kernels/sampling_params.h"

namespace tandem::bench {

// Σ_v min(p(v), q(v)): what rejection sampling accepts at the position.
double overlap(std::span<const float> p, std::span<const float> q);
// β / (2 − β): the Gumbel coupling's guaranteed acceptance for overlap β.
double gumbel_bound(double beta);
// The exact probability that the Gumbel races on p and q, fed the same
// exponentials, pick the same token. O(V log V).
double gumbel_agreement(std::span<const float> p, std::span<const float> q);

// Sums over the positions of some plain outputs.
struct PlainPathBound {
  long positions = 0;
  double beta_sum = 0;       // Σ β
  double bound_sum = 0;      // Σ β/(2−β): its mean is the bound on the coupling's mean
  double agreement_sum = 0;  // Σ exact agreement
  long below_bound = 0;      // positions whose exact agreement < β/(2−β): must be 0
  long reproduced = 0;       // positions where the Gumbel race on p gives the output's token
  // What drawing one of these p rows costs on the host (cpu::): by the
  // Gumbel race (V Philox exponentials) and by inverse CDF (one uniform).
  double race_seconds = 0, inverse_cdf_seconds = 0;

  double mean_beta() const { return positions ? beta_sum / positions : 0; }
  double mean_bound() const { return positions ? bound_sum / positions : 0; }
  double mean_agreement() const { return positions ? agreement_sum / positions : 0; }
  double race_us() const { return positions ? 1e6 * race_seconds / positions : 0; }
  double inverse_cdf_us() const { return positions ? 1e6 * inverse_cdf_seconds / positions : 0; }
};

// One plain seeded output: its prompt, its tokens, the seed it was sampled with.
struct PlainOutput {
  std::vector<int32_t> prompt;
  std::vector<int32_t> tokens;
  uint64_t seed = 0;
};

// Scores every position of the outputs: one forward of prompt + tokens through
// the target and the draft each, rows standardized with `sampling`. A
// position's noise key is its absolute position in the sequence, as the
// engine's (kernels/verify_types.h), so `reproduced` counts the tokens plain
// decoding under the Gumbel coupling would emit from these rows.
PlainPathBound score_plain_path(OpenModel& open, std::span<const PlainOutput> outputs,
                                const SamplingParams& sampling);

}  // namespace tandem::bench
