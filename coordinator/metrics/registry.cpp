#include "coordinator/metrics/registry.h"

#include <algorithm>
#include <array>
#include <limits>
#include <variant>

#include "common/error.h"
#include "coordinator/metrics/exposition_format.h"

namespace tandem::metrics {

// One time series: a label set and the metric that holds its value(s).
struct Registry::Series {
  template <typename Metric, typename... Args>
  Series(Labels series_labels, std::in_place_type_t<Metric> type, Args&&... args)
      : labels(std::move(series_labels)), metric(type, std::forward<Args>(args)...) {}

  Labels labels;
  std::variant<Counter, Gauge, Histogram> metric;
};

// All series that share a name: one # HELP and # TYPE line in the output.
struct Registry::Family {
  std::string name;
  std::string help;
  MetricType type;
  std::vector<std::string> label_names;
  std::vector<double> upper_bounds;  // histograms only
  std::vector<std::unique_ptr<Series>> series;  // in creation order
};

namespace {

// The series a histogram named H writes besides H itself.
constexpr std::array<std::string_view, 3> kHistogramSuffixes = {"_bucket", "_sum", "_count"};

std::vector<std::string> names_of(const Labels& labels) {
  std::vector<std::string> names;
  names.reserve(labels.size());
  for (const auto& [name, value] : labels) names.push_back(name);
  return names;
}

// Compares without building a vector: this runs on every lookup.
bool has_label_names(const Labels& labels, const std::vector<std::string>& names) {
  return std::equal(labels.begin(), labels.end(), names.begin(), names.end(),
                    [](const auto& label, const std::string& name) { return label.first == name; });
}

std::string join(const std::vector<std::string>& names) {
  std::string joined = "{";
  for (std::size_t i = 0; i < names.size(); ++i) joined += (i ? "," : "") + names[i];
  return joined + "}";
}

void check_label_names(std::string_view metric, const Labels& labels, MetricType type) {
  for (std::size_t i = 0; i < labels.size(); ++i) {
    const std::string& label = labels[i].first;
    require(is_valid_label_name(label), ErrorKind::invalid_argument, [&] {
      return "metric " + std::string(metric) + ": label name '" + label +
             "' is not [a-zA-Z_][a-zA-Z0-9_]* (or starts with the reserved '__')";
    });
    require(type != MetricType::histogram || label != "le", ErrorKind::invalid_argument, [&] {
      return "histogram " + std::string(metric) + ": the label 'le' is reserved for bucket bounds";
    });
    for (std::size_t j = 0; j < i; ++j) {
      require(labels[j].first != label, ErrorKind::invalid_argument, [&] {
        return "metric " + std::string(metric) + ": label '" + label + "' is given twice";
      });
    }
  }
}

void check_label_values(std::string_view metric, const Labels& labels) {
  for (const auto& [label, value] : labels) {
    require(is_valid_utf8(value), ErrorKind::invalid_argument, [&] {
      return "metric " + std::string(metric) + ": the value of label '" + label +
             "' is not valid UTF-8";
    });
  }
}

// {a="x",b="y"} with extra_label (the histogram's le) appended when given;
// nothing at all when there are no labels.
std::string render_labels(const Labels& labels, std::string_view extra_label = {},
                          std::string_view extra_value = {}) {
  if (labels.empty() && extra_label.empty()) return "";
  std::string text = "{";
  bool first = true;
  const auto append = [&](std::string_view name, std::string_view value) {
    if (!first) text += ',';
    first = false;
    text.append(name).append("=\"").append(escape_label_value(value)).append("\"");
  };
  for (const auto& [name, value] : labels) append(name, value);
  if (!extra_label.empty()) append(extra_label, extra_value);
  return text + "}";
}

void render_sample(std::string& out, std::string_view name, std::string_view suffix,
                   const std::string& labels, double value) {
  out.append(name).append(suffix).append(labels).append(" ").append(format_number(value)) += '\n';
}

}  // namespace

const char* metric_type_name(MetricType type) {
  switch (type) {
    case MetricType::counter:
      return "counter";
    case MetricType::gauge:
      return "gauge";
    case MetricType::histogram:
      return "histogram";
  }
  return "untyped";
}

Registry::Registry() = default;
Registry::~Registry() = default;

Counter& Registry::counter(std::string_view name, std::string_view help, const Labels& labels) {
  std::lock_guard lock(mutex_);
  return std::get<Counter>(series_for(family_for(name, help, MetricType::counter, labels, {}), labels).metric);
}

Gauge& Registry::gauge(std::string_view name, std::string_view help, const Labels& labels) {
  std::lock_guard lock(mutex_);
  return std::get<Gauge>(series_for(family_for(name, help, MetricType::gauge, labels, {}), labels).metric);
}

Histogram& Registry::histogram(std::string_view name, std::string_view help,
                               std::vector<double> upper_bounds, const Labels& labels) {
  std::lock_guard lock(mutex_);
  Family& family = family_for(name, help, MetricType::histogram, labels, upper_bounds);
  return std::get<Histogram>(series_for(family, labels).metric);
}

Registry::Family& Registry::family_for(std::string_view name, std::string_view help,
                                       MetricType type, const Labels& labels,
                                       const std::vector<double>& upper_bounds) {
  const auto found = families_by_name_.find(name);
  if (found != families_by_name_.end()) {
    Family& family = *found->second;
    const auto mismatch = [&](const std::string& what) {
      return "metric " + family.name + " is already registered with " + what;
    };
    require(family.type == type, ErrorKind::invalid_argument,
            [&] { return mismatch(std::string("type ") + metric_type_name(family.type)); });
    require(family.help == help, ErrorKind::invalid_argument,
            [&] { return mismatch("other help text: \"" + family.help + "\""); });
    require(has_label_names(labels, family.label_names), ErrorKind::invalid_argument,
            [&] { return mismatch("label names " + join(family.label_names)); });
    require(family.upper_bounds == upper_bounds, ErrorKind::invalid_argument,
            [&] { return mismatch("other bucket bounds"); });
    return family;
  }

  // A new family: check everything before anything is stored, so a bad call
  // leaves the registry as it was.
  require(is_valid_metric_name(name), ErrorKind::invalid_argument, [&] {
    return "metric name '" + std::string(name) + "' is not [a-zA-Z_:][a-zA-Z0-9_:]*";
  });
  require(is_valid_utf8(help), ErrorKind::invalid_argument,
          [&] { return "metric " + std::string(name) + ": help text is not valid UTF-8"; });
  check_label_names(name, labels, type);
  check_label_values(name, labels);  // series_for() checks too, but only after storing
  check_no_histogram_clash(name, type);
  if (type == MetricType::histogram) static_cast<void>(Histogram(upper_bounds));  // throws on bad bounds

  auto family = std::make_unique<Family>();
  family->name = std::string(name);
  family->help = std::string(help);
  family->type = type;
  family->label_names = names_of(labels);
  family->upper_bounds = upper_bounds;
  Family& stored = *family;
  families_.push_back(std::move(family));
  families_by_name_.emplace(stored.name, &stored);
  return stored;
}

Registry::Series& Registry::series_for(Family& family, const Labels& labels) {
  for (const auto& series : family.series) {
    if (series->labels == labels) return *series;
  }
  check_label_values(family.name, labels);
  switch (family.type) {
    case MetricType::counter:
      family.series.push_back(std::make_unique<Series>(labels, std::in_place_type<Counter>));
      break;
    case MetricType::gauge:
      family.series.push_back(std::make_unique<Series>(labels, std::in_place_type<Gauge>));
      break;
    case MetricType::histogram:
      family.series.push_back(
          std::make_unique<Series>(labels, std::in_place_type<Histogram>, family.upper_bounds));
      break;
  }
  return *family.series.back();
}

// A histogram H also writes H_bucket, H_sum and H_count; no other family may
// take those names, nor may a histogram be named so that its series would
// collide with an existing family.
void Registry::check_no_histogram_clash(std::string_view name, MetricType type) const {
  for (const std::string_view suffix : kHistogramSuffixes) {
    if (name.ends_with(suffix)) {
      const auto base = families_by_name_.find(name.substr(0, name.size() - suffix.size()));
      require(base == families_by_name_.end() || base->second->type != MetricType::histogram,
              ErrorKind::invalid_argument, [&] {
                return "metric name '" + std::string(name) + "' is taken by the series of histogram " +
                       base->second->name;
              });
    }
    if (type == MetricType::histogram) {
      const std::string series_name = std::string(name) + std::string(suffix);
      require(!families_by_name_.contains(series_name), ErrorKind::invalid_argument, [&] {
        return "histogram " + std::string(name) + " would write " + series_name +
               ", which is already a metric";
      });
    }
  }
}

std::string Registry::render() const {
  std::lock_guard lock(mutex_);
  std::string out;
  for (const auto& family : families_) {
    out.append("# HELP ").append(family->name).append(" ").append(escape_help(family->help)) += '\n';
    out.append("# TYPE ").append(family->name).append(" ").append(metric_type_name(family->type)) +=
        '\n';
    for (const auto& series : family->series) {
      const std::string labels = render_labels(series->labels);
      switch (family->type) {
        case MetricType::counter:
          render_sample(out, family->name, "", labels, std::get<Counter>(series->metric).value());
          break;
        case MetricType::gauge:
          render_sample(out, family->name, "", labels, std::get<Gauge>(series->metric).value());
          break;
        case MetricType::histogram: {
          const HistogramSnapshot snapshot = std::get<Histogram>(series->metric).snapshot();
          for (std::size_t i = 0; i < snapshot.cumulative_counts.size(); ++i) {
            const double bound = i < snapshot.upper_bounds.size() ? snapshot.upper_bounds[i]
                                                                  : std::numeric_limits<double>::infinity();
            render_sample(out, family->name, "_bucket",
                          render_labels(series->labels, "le", format_number(bound)),
                          static_cast<double>(snapshot.cumulative_counts[i]));
          }
          render_sample(out, family->name, "_sum", labels, snapshot.sum);
          render_sample(out, family->name, "_count", labels, static_cast<double>(snapshot.count));
          break;
        }
      }
    }
  }
  return out;
}

}  // namespace tandem::metrics
