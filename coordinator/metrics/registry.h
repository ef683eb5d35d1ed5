// Registry: the set of metric families a process reports, and their
// rendering in the Prometheus text format 0.0.4 for GET /metrics.
//
// Thread-safety: every member is safe to call from any thread. Looking up or
// creating a metric takes the registry's lock; updating one (Counter::inc and
// the like) never does, so hot paths should look a metric up once and keep
// the reference, which stays valid for the registry's life.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "coordinator/metrics/metric_types.h"

namespace tandem::metrics {

// Label (name, value) pairs, rendered in the order given. Every series of a
// family has the same label names in the same order.
using Labels = std::vector<std::pair<std::string, std::string>>;

enum class MetricType { counter, gauge, histogram };

// "counter", "gauge" or "histogram", as a # TYPE line spells it.
const char* metric_type_name(MetricType type);

class Registry {
 public:
  Registry();
  ~Registry();
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // The series `name{labels}`, created on first use. The same name and labels
  // give the same object. An Error (invalid_argument) when the name or a label
  // breaks the Prometheus grammar, or the name is already a family of another
  // type, help, label names or bucket bounds, or clashes with a histogram's
  // _bucket/_sum/_count series.
  Counter& counter(std::string_view name, std::string_view help, const Labels& labels = {});
  Gauge& gauge(std::string_view name, std::string_view help, const Labels& labels = {});
  // upper_bounds: finite, strictly increasing; +Inf is implicit.
  Histogram& histogram(std::string_view name, std::string_view help,
                       std::vector<double> upper_bounds, const Labels& labels = {});

  // Every family in the order it was first registered, each with one # HELP
  // and # TYPE line and its series in the order they were created. Serve it
  // with Content-Type kContentType (exposition_format.h).
  std::string render() const;

 private:
  struct Series;
  struct Family;

  // Finds or creates the family and series; the caller holds mutex_.
  Family& family_for(std::string_view name, std::string_view help, MetricType type,
                     const Labels& labels, const std::vector<double>& upper_bounds);
  Series& series_for(Family& family, const Labels& labels);
  void check_no_histogram_clash(std::string_view name, MetricType type) const;

  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<Family>> families_;  // in registration order
  std::map<std::string, Family*, std::less<>> families_by_name_;
};

}  // namespace tandem::metrics
