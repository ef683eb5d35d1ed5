#include "workers/speculation/speculation_guard.h"

#include <algorithm>
#include <cmath>

namespace tandem {
namespace {

// Each step's weight in the running sums decays by this factor per step of
// the same kind: the rates cover roughly the last 1 / (1 - kDecay) steps.
constexpr double kDecay = 0.9;
// While drafting loses, the wait between two re-measurements grows to at
// most this many times tuning.guard_explore_every decisions.
constexpr int kMaxExploreBackoff = 8;
// A drafting step after this many plain ones or more is a switch, not
// counted: the draft cache catches up over all of them. (After a single
// plain step, as when the two kinds are measured in turn, its catch-up is
// one token more than a drafting step's own, and it counts.)
constexpr int kSwitchPlainRun = 2;

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
  if (!measured(b)) {
    // Not judged yet: the kind with fewer measured steps goes next, so a
    // verdict comes after about 2 · min_steps decode steps. Speculation that
    // does not pay at this batch size stops that soon, not after the dozens
    // of drafting steps a verdict would otherwise wait for.
    return b.steps[1] <= b.steps[0];
  }
  if (b.rate[1] >= b.rate[0]) {  // drafting wins: one plain step in explore_every_
    b.explore_interval = 0;
    b.since_explore = 0;
    return b.decisions % explore_every_ != 0;
  }
  // Drafting loses. A step that drafts again after a run of plain ones pays
  // the draft cache's catch-up over every token since (for every session),
  // so re-measuring is the dearest step there is: each one that leaves the
  // verdict standing doubles the wait for the next, up to
  // kMaxExploreBackoff · explore_every_.
  if (b.explore_interval == 0) b.explore_interval = explore_every_;
  if (++b.since_explore < b.explore_interval) return false;
  b.since_explore = 0;
  b.explore_interval = std::min(2 * b.explore_interval, kMaxExploreBackoff * explore_every_);
  // Drafting is measured afresh: until min_steps drafting steps have been
  // counted (after the switch, which is not), the bucket is unjudged and
  // drafts. An old rate, formed by other sessions, other texts, or in the
  // tail of a busier load, would take many re-measurements to move. The
  // rate goes too (0: not measured), so that the measured-speed-up gauge
  // does not show the old one while the new steps are being counted.
  b.steps[1] = 0;
  b.tokens[1] = b.seconds[1] = b.rate[1] = 0;
  return true;
}

void SpeculationGuard::record(int batch, bool drafted, int tokens, double seconds) {
  if (!(seconds > 0) || tokens <= 0) return;
  if (!drafted) {
    ++plain_run_;
  } else {
    const bool switching = plain_run_ >= kSwitchPlainRun;
    plain_run_ = 0;
    if (switching) return;  // the catch-up after plain steps: see the header
  }
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
