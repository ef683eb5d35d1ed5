// The three Prometheus metric kinds Tandem reports: Counter, Gauge and
// Histogram. Each holds only atomics, so updates are lock-free and safe from
// any number of threads while Registry::render() reads them. Objects are made
// by a Registry, which owns them and hands out references.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

namespace tandem::metrics {

static_assert(std::atomic<double>::is_always_lock_free, "metrics need lock-free atomic<double>");
static_assert(std::atomic<std::uint64_t>::is_always_lock_free, "metrics need lock-free atomic<uint64_t>");

// A total that only goes up (requests served, tokens generated). Thread-safe.
class Counter {
 public:
  // Adds amount; a negative or NaN amount is an Error (a counter never falls).
  void inc(double amount = 1);
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

// A value that goes up and down (queue depth, KV blocks in use). Thread-safe.
class Gauge {
 public:
  void set(double value) { value_.store(value, std::memory_order_relaxed); }
  void inc(double amount = 1) { value_.fetch_add(amount, std::memory_order_relaxed); }
  void dec(double amount = 1) { value_.fetch_sub(amount, std::memory_order_relaxed); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

// What a Histogram holds at one moment. cumulative_counts[i] counts the
// observations <= upper_bounds[i]; the last entry is the +Inf bucket and
// always equals count.
struct HistogramSnapshot {
  std::vector<double> upper_bounds;  // (B) finite, strictly increasing
  std::vector<std::uint64_t> cumulative_counts;  // (B + 1)
  double sum = 0;
  std::uint64_t count = 0;
};

// Observations sorted into buckets with fixed upper bounds (latencies, tokens
// per step). Thread-safe; observe() is lock-free.
class Histogram {
 public:
  // upper_bounds: finite and strictly increasing, else an Error. The +Inf
  // bucket is implicit and must not be listed.
  explicit Histogram(std::vector<double> upper_bounds);

  // Counts value in the first bucket whose bound is >= value (NaN and values
  // above every bound land in +Inf only) and adds it to the sum.
  void observe(double value);

  const std::vector<double>& upper_bounds() const { return upper_bounds_; }

  // The count is derived from the buckets, so +Inf == count even while other
  // threads observe; the sum may lag or lead them by the values in flight.
  HistogramSnapshot snapshot() const;

 private:
  std::vector<double> upper_bounds_;
  // (B + 1) per-bucket (not cumulative) counts; the last is "above every bound".
  std::unique_ptr<std::atomic<std::uint64_t>[]> bucket_counts_;
  std::atomic<double> sum_{0};
};

}  // namespace tandem::metrics
