// Percentiles and the run summary: see statistics.h.
#include "tools/loadtest/statistics.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "common/error.h"

namespace tandem::loadtest {
namespace {

// percentile() on values already sorted ascending and not empty.
double sorted_percentile(const std::vector<double>& sorted, double p) {
  const double rank = p / 100.0 * static_cast<double>(sorted.size() - 1);
  const auto below = static_cast<size_t>(std::floor(rank));
  const size_t above = std::min(below + 1, sorted.size() - 1);
  const double fraction = rank - static_cast<double>(below);
  return sorted[below] + (sorted[above] - sorted[below]) * fraction;
}

void require_percent(double p) {
  require(p >= 0.0 && p <= 100.0, ErrorKind::invalid_argument,
          [&] { return "percentile " + std::to_string(p) + " is outside [0, 100]"; });
}

// TPOT of one completed request; 0 when it has no second token (vLLM's
// convention for goodput; such requests stay out of the TPOT distribution).
double time_per_output_token(const RequestRecord& record) {
  if (record.output_tokens <= 1) return 0.0;
  return (record.latency - record.ttft) / static_cast<double>(record.output_tokens - 1);
}

bool within(const std::optional<double>& bound, double value) {
  return !bound || value <= *bound;
}

bool meets_slo(const RequestRecord& record, const Slo& slo) {
  return within(slo.ttft_seconds, record.ttft) &&
         within(slo.tpot_seconds, time_per_output_token(record)) &&
         within(slo.e2e_seconds, record.latency);
}

}  // namespace

double percentile(std::vector<double> values, double p) {
  require(!values.empty(), ErrorKind::invalid_argument,
          "percentile of an empty sample: there is nothing to rank");
  require_percent(p);
  std::sort(values.begin(), values.end());
  return sorted_percentile(values, p);
}

Distribution describe(std::vector<double> values) {
  Distribution d;
  if (values.empty()) return d;
  std::sort(values.begin(), values.end());
  d.count = values.size();
  d.mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(d.count);
  d.median = sorted_percentile(values, 50);
  d.p90 = sorted_percentile(values, 90);
  d.p99 = sorted_percentile(values, 99);
  d.min = values.front();
  d.max = values.back();
  return d;
}

RunSummary summarize(std::span<const RequestRecord> records, double duration_seconds,
                     const Slo& slo) {
  require(duration_seconds >= 0.0 && std::isfinite(duration_seconds),
          ErrorKind::invalid_argument,
          [&] { return "run duration " + std::to_string(duration_seconds) +
                       " s is not a finite non-negative number"; });
  RunSummary s;
  s.duration_seconds = duration_seconds;
  s.requests = records.size();
  std::vector<double> ttfts, tpots, itls, e2es;
  size_t good = 0;
  for (const RequestRecord& record : records) {
    if (!record.ok) {
      ++s.failed;
      ++s.errors_by_status[record.status];
      s.first_error_by_status.try_emplace(record.status, record.error);  // keeps the first
      continue;
    }
    ++s.completed;
    s.prompt_tokens += record.prompt_tokens;
    s.cached_tokens += record.cached_tokens;
    s.output_tokens += record.output_tokens;
    ttfts.push_back(record.ttft);
    e2es.push_back(record.latency);
    if (record.output_tokens > 1) tpots.push_back(time_per_output_token(record));
    itls.insert(itls.end(), record.itl.begin(), record.itl.end());
    if (meets_slo(record, slo)) ++good;
  }
  // A zero-length run has no rate; report 0 rather than infinity.
  auto per_second = [&](double amount) {
    return duration_seconds > 0.0 ? amount / duration_seconds : 0.0;
  };
  s.request_throughput = per_second(static_cast<double>(s.completed));
  s.output_throughput = per_second(static_cast<double>(s.output_tokens));
  s.total_token_throughput = per_second(static_cast<double>(s.prompt_tokens + s.output_tokens));
  s.ttft = describe(std::move(ttfts));
  s.tpot = describe(std::move(tpots));
  s.itl = describe(std::move(itls));
  s.e2e = describe(std::move(e2es));
  if (slo.any()) s.goodput = per_second(static_cast<double>(good));
  return s;
}

}  // namespace tandem::loadtest
