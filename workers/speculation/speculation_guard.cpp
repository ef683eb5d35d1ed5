#include "workers/speculation/speculation_guard.h"

#include <algorithm>
#include <cmath>

namespace tandem {
namespace {

// Each step's weight in the running sums decays by this factor per step of
// the same kind: the rates cover roughly the last 1 / (1 - kDecay) steps.
constexpr double kDecay = 0.9;

}  // namespace

int SpeculationGuard::index(int batch) {
  // The nearest power of two, so that a batch hovering at 15-16 sessions
  // (sessions ending and arriving) stays in one bucket.
  const double b = std::max(batch, 1);
  return std::min(static_cast<int>(std::lround(std::log2(b))), kBuckets - 1);
}

bool SpeculationGuard::measured(const Bucket& b) const {
  return b.steps[0] >= min_steps_ && b.steps[1] >= min_steps_;
}

bool SpeculationGuard::allow_drafting(int batch) {
  Bucket& b = bucket(batch);
  ++b.decisions;
  if (measured(b)) {
    const bool explore = b.decisions % explore_every_ == 0;
    return (b.rate[1] >= b.rate[0]) != explore;
  }
  // Not judged yet: gather a few steps of each kind first (plain ones one
  // step in 8, since drafting is what the policy wants here).
  if (b.steps[1] < min_steps_) return true;
  return b.decisions % 8 != 0;
}

void SpeculationGuard::record(int batch, bool drafted, int tokens, double seconds) {
  if (!(seconds > 0) || tokens <= 0) return;
  Bucket& b = bucket(batch);
  const size_t side = drafted ? 1 : 0;
  // Tokens over seconds of the recent steps, not a mean of per-step rates:
  // a drafting step's yield varies from 1 to γ+1 tokens, and averaging
  // ratios would overweight the quick, lucky steps.
  b.tokens[side] = kDecay * b.tokens[side] + tokens;
  b.seconds[side] = kDecay * b.seconds[side] + seconds;
  b.rate[side] = b.tokens[side] / b.seconds[side];
  ++b.steps[side];
}

}  // namespace tandem
