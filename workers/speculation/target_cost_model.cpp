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
  std::vector<const Point*> points;  // increasing in tokens: buckets are disjoint ranges
  for (const Point& p : buckets_)
    if (p.passes > 0) points.push_back(&p);
  if (points.empty()) return 0;
  const double n = new_tokens;
  if (points.size() == 1 || n <= points.front()->tokens) return points.front()->seconds;
  auto line = [n](const Point& a, const Point& b) {
    return a.seconds + (b.seconds - a.seconds) * (n - a.tokens) / (b.tokens - a.tokens);
  };
  for (size_t i = 1; i < points.size(); ++i)
    if (n <= points[i]->tokens) return line(*points[i - 1], *points[i]);
  // Past the largest bucket: the last two points' slope, but never below the
  // largest point's time (noise must not make more tokens look cheaper).
  const Point& last = *points.back();
  return std::max(last.seconds, line(*points[points.size() - 2], last));
}

double TargetCostModel::relative_cost(int batch, int k) const {
  if (!calibrated_ || k <= 1) return 1.0;
  const double one = seconds(batch);
  if (!(one > 0)) return 1.0;
  return std::max(1.0, seconds(batch * k) / one);
}

}  // namespace tandem
