#include "workers/speculation/speculation_guard.h"

#include <algorithm>
#include <bit>

namespace tandem {
namespace {

// Weight of a new step in the smoothed rate, once a side has a few steps.
constexpr double kSmoothing = 0.2;

}  // namespace

int SpeculationGuard::index(int batch) {
  const unsigned b = static_cast<unsigned>(std::max(batch, 1));
  return std::min(static_cast<int>(std::bit_width(b)) - 1, 15);
}

bool SpeculationGuard::allow_drafting(int batch) {
  Bucket& b = bucket(batch);
  const bool explore = ++b.decisions % kExplore == 0;
  if (b.steps[1] == 0) return true;                     // drafting never measured here: try it
  if (b.steps[0] == 0) return !explore;                 // measure plain steps once in a while
  const bool drafting_wins = b.rate[1] >= b.rate[0];
  return drafting_wins ? !explore : explore;
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
