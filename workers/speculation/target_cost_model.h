// TargetCostModel: what a target forward pass costs as a function of the
// new tokens it carries, learned from the passes the engine runs.
//
// Passes are recorded as (n new tokens, seconds). Bucket b holds the passes
// with n in [2^b, 2^(b+1)) as an exponentially smoothed point (mean n, mean
// seconds). T(n) interpolates linearly in n between neighbouring bucket
// points and extrapolates linearly from the last two above the largest one
// (below the smallest, T is that bucket's time). The batched speculation
// cost (docs/design.md, "Goals" 2) is
//   v(B, k) = T(B·k) / T(B):
// a pass carrying k tokens for each of B sessions relative to one token
// each. Until calibrated (SpeculativeEngine::calibrate times passes of 1, 2,
// 4, ... tokens), v is 1: Theorem 3.8's assumption. Context length also
// changes a pass's cost; the model ignores it (live passes keep the points
// near the contexts actually served).
// Not thread-safe: owned by the engine thread.
#pragma once

#include <vector>

namespace tandem {

class TargetCostModel {
 public:
  // smoothing: weight of a new pass in its bucket once the bucket has seen
  // 1/smoothing passes (before that, a plain mean).
  explicit TargetCostModel(double smoothing = 0.1);

  // One target pass that fed `new_tokens` (>= 1) tokens in `seconds`.
  void record(int new_tokens, double seconds);
  // Marks the points as covering the serving range (see calibrate()).
  void mark_calibrated() { calibrated_ = true; }
  bool calibrated() const { return calibrated_; }
  // True once any pass has been recorded.
  bool has_data() const;

  // T(n): expected seconds of a pass with n new tokens (0 without data).
  double seconds(int new_tokens) const;
  // v(B, k) = T(B·k) / T(B), at least 1 (more tokens are never cheaper);
  // exactly 1 until calibrated.
  double relative_cost(int batch, int k) const;

 private:
  struct Point {
    double tokens = 0;
    double seconds = 0;
    long passes = 0;
  };
  std::vector<Point> buckets_;  // index b: passes with n in [2^b, 2^(b+1))
  double smoothing_;
  bool calibrated_ = false;
};

}  // namespace tandem
