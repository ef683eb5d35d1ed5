#include "workers/speculation/target_cost_model.h"

#include <algorithm>
#include <bit>
#include <string>

#include "common/error.h"

namespace tandem {

TargetCostModel::TargetCostModel(double smoothing) : smoothing_(smoothing) {
  require(smoothing > 0 && smoothing <= 1, ErrorKind::invalid_argument,
          "target cost model smoothing must be in (0, 1], got " + std::to_string(smoothing));
}

void TargetCostModel::record(int new_tokens, double seconds) {
  if (new_tokens < 1 || !(seconds > 0)) return;  // nothing measured
  const auto bucket = static_cast<size_t>(std::bit_width(static_cast<unsigned>(new_tokens)) - 1);
  if (buckets_.size() <= bucket) buckets_.resize(bucket + 1);
  Point& p = buckets_[bucket];
  ++p.passes;
  // A plain mean while the bucket is young, then a moving average so that
  // the point follows the machine (other load, thermal state).
  const double weight = std::max(1.0 / static_cast<double>(p.passes), smoothing_);
  p.tokens += weight * (new_tokens - p.tokens);
  p.seconds += weight * (seconds - p.seconds);
}

bool TargetCostModel::has_data() const {
  return std::any_of(buckets_.begin(), buckets_.end(), [](const Point& p) { return p.passes > 0; });
}

double TargetCostModel::seconds(int new_tokens) const {
  // Walks the measured points in increasing token order (buckets are
  // disjoint ranges) without building a list: this runs for every γ the
  // policy weighs, every step.
  const double n = new_tokens;
  auto line = [n](const Point& a, const Point& b) {
    return a.seconds + (b.seconds - a.seconds) * (n - a.tokens) / (b.tokens - a.tokens);
  };
  const Point* previous = nullptr;
  const Point* last = nullptr;  // the largest point, and the one before it
  for (const Point& p : buckets_) {
    if (p.passes == 0) continue;
    if (!last && n <= p.tokens) return p.seconds;  // at or below the smallest point
    if (last && n <= p.tokens) return line(*last, p);
    previous = last;
    last = &p;
  }
  if (!last) return 0;
  if (!previous) return last->seconds;  // one point: flat
  // Past the largest bucket: the last two points' slope, but never below the
  // largest point's time (noise must not make more tokens look cheaper).
  return std::max(last->seconds, line(*previous, *last));
}

double TargetCostModel::relative_cost(int batch, int k) const {
  if (!calibrated_ || k <= 1) return 1.0;
  const double one = seconds(batch);
  if (!(one > 0)) return 1.0;
  return std::max(1.0, seconds(batch * k) / one);
}

}  // namespace tandem
