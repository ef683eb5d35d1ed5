#include "workers/speculation/speculation_guard.h"

#include <algorithm>
#include <cmath>

namespace tandem {
namespace {

// Weight of a new step in the smoothed rate, once a side has a few steps.
constexpr double kSmoothing = 0.2;

}  // namespace

int SpeculationGuard::index(int batch) {
  // The nearest power of two, so that a batch hovering at 15-16 sessions
  // (sessions ending and arriving) stays in one bucket.
  const double b = std::max(batch, 1);
  return std::min(static_cast<int>(std::lround(std::log2(b))), kBuckets - 1);
}

bool SpeculationGuard::measured(const Bucket& b) {
  return b.steps[0] >= kMinSteps && b.steps[1] >= kMinSteps;
}

bool SpeculationGuard::allow_drafting(int batch) {
  Bucket& b = bucket(batch);
  ++b.decisions;
  if (measured(b)) {
    const bool explore = b.decisions % kExplore == 0;
    return (b.rate[1] >= b.rate[0]) != explore;
  }
  // Not judged yet: gather a few steps of each kind first (plain ones one
  // step in 8, since drafting is what the policy wants here).
  if (b.steps[1] < kMinSteps) return true;
  return b.decisions % 8 != 0;
}

void SpeculationGuard::record(int batch, bool drafted, int tokens, double seconds) {
  if (!(seconds > 0) || tokens <= 0) return;
  Bucket& b = bucket(batch);
  const int side = drafted ? 1 : 0;
  const double rate = tokens / seconds;
  ++b.steps[side];
  const double weight = std::max(kSmoothing, 1.0 / b.steps[side]);
  b.rate[side] += weight * (rate - b.rate[side]);
}

}  // namespace tandem
