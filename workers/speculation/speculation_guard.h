// SpeculationGuard: checks the γ cost model against what steps achieve.
//
// The cost model (gamma_policy.h) predicts; this measures. For each batch
// size (in buckets around powers of two) it keeps the smoothed tokens per second of
// decode steps that drafted and of steps that did not, taking the two kinds
// in turn until each has tuning.guard_min_steps steps (single steps are
// noisy). Once drafting has been measured slower at this batch size,
// automatic sessions stop drafting (their probes included) except to
// re-measure it, after tuning.guard_explore_every decisions, then twice as
// many each time the verdict stands (up to 8x); while drafting wins, one
// step in guard_explore_every runs without drafts, to keep plain honest.
// Rates are recent tokens over recent seconds (decaying sums).
// A drafting step right after two or more plain ones is not counted: its
// draft cache catches up over every token since, a cost of switching, not
// of drafting. Counted, it made every re-measurement after a run of plain
// steps look slow, and a verdict that drafting loses confirmed itself (a
// batch-1 verdict formed in the tails of busy runs kept a later
// single-session load from drafting). A re-measurement therefore starts
// drafting's rate afresh and drafts until guard_min_steps steps after the
// switch have been counted.
// What this catches that the model misses: per-step overheads, the draft
// cache's steady catch-up, and model error near break-even, where the
// promise "speculation never makes the server slower" is decided.
// Not thread-safe: owned by the engine thread.
#pragma once

#include <array>
#include <cstddef>

#include "workers/speculation/speculation_tuning.h"

namespace tandem {

class SpeculationGuard {
 public:
  explicit SpeculationGuard(const SpeculationTuning& tuning = {})
      : explore_every_(tuning.guard_explore_every), min_steps_(tuning.guard_min_steps) {}

  // Before a step at batch size B: may automatic sessions draft?
  bool allow_drafting(int batch);
  // After a decode step (no prefill in it): tokens emitted in `seconds`,
  // and whether any session drafted.
  void record(int batch, bool drafted, int tokens, double seconds);

  // Smoothed tokens per second at this batch size (0 until measured).
  double drafting_rate(int batch) const { return bucket(batch).rate[1]; }
  double plain_rate(int batch) const { return bucket(batch).rate[0]; }

 private:
  struct Bucket {
    std::array<double, 2> rate{};  // [0] plain steps, [1] drafting steps: tokens / seconds
    std::array<double, 2> tokens{}, seconds{};  // decaying sums behind rate
    std::array<int, 2> steps{};
    int decisions = 0;
    // While drafting loses: decisions between two that draft to re-measure
    // it (0: explore_every_), and decisions since the last one.
    int explore_interval = 0;
    int since_explore = 0;
  };
  static constexpr int kBuckets = 16;
  static int index(int batch);
  bool measured(const Bucket& b) const;
  Bucket& bucket(int batch) { return buckets_[static_cast<size_t>(index(batch))]; }
  const Bucket& bucket(int batch) const { return buckets_[static_cast<size_t>(index(batch))]; }

  int explore_every_;
  int min_steps_;
  int plain_run_ = 0;  // plain decode steps since the last drafting one, at any batch size
  std::array<Bucket, kBuckets> buckets_{};
};

}  // namespace tandem
