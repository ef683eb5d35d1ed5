#include "coordinator/metrics/metric_types.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "common/error.h"

namespace tandem::metrics {

void Counter::inc(double amount) {
  // !(amount >= 0) also catches NaN, which would poison the total for good.
  require(amount >= 0, ErrorKind::internal, [&] {
    return "Counter::inc(" + std::to_string(amount) + "): a counter only goes up; use a Gauge";
  });
  value_.fetch_add(amount, std::memory_order_relaxed);
}

Histogram::Histogram(std::vector<double> upper_bounds) : upper_bounds_(std::move(upper_bounds)) {
  for (std::size_t i = 0; i < upper_bounds_.size(); ++i) {
    require(std::isfinite(upper_bounds_[i]), ErrorKind::invalid_argument,
            "histogram bucket bound " + std::to_string(i) +
                " is not finite; leave +Inf out, every histogram has that bucket");
    require(i == 0 || upper_bounds_[i - 1] < upper_bounds_[i], ErrorKind::invalid_argument,
            "histogram bucket bounds must be strictly increasing (bound " + std::to_string(i) +
                " is not above the one before it)");
  }
  bucket_counts_ = std::make_unique<std::atomic<std::uint64_t>[]>(upper_bounds_.size() + 1);
}

void Histogram::observe(double value) {
  // lower_bound: the first bound >= value, i.e. the bucket whose le holds it.
  // NaN compares false with everything, so it is sent past the bounds by hand.
  const std::size_t bucket =
      std::isnan(value) ? upper_bounds_.size()
                        : static_cast<std::size_t>(
                              std::lower_bound(upper_bounds_.begin(), upper_bounds_.end(), value) -
                              upper_bounds_.begin());
  bucket_counts_[bucket].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(value, std::memory_order_relaxed);
}

HistogramSnapshot Histogram::snapshot() const {
  HistogramSnapshot snapshot;
  snapshot.upper_bounds = upper_bounds_;
  snapshot.cumulative_counts.resize(upper_bounds_.size() + 1);
  std::uint64_t running_total = 0;
  for (std::size_t i = 0; i <= upper_bounds_.size(); ++i) {
    running_total += bucket_counts_[i].load(std::memory_order_relaxed);
    snapshot.cumulative_counts[i] = running_total;
  }
  snapshot.count = running_total;
  snapshot.sum = sum_.load(std::memory_order_relaxed);
  return snapshot;
}

}  // namespace tandem::metrics
