// Tests of tools/loadtest/statistics.h: numpy-compatible percentiles and the
// run summary on a hand-built set of records whose answers are worked out
// by hand in the comments.
#include "tools/loadtest/statistics.h"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"

namespace tandem::loadtest {
namespace {

// Expected values computed offline with numpy 1.24.2:
//   np.percentile([15, 20, 35, 40, 50], p) for p in (0, 25, 40, 50, 90, 99, 100)
//   -> 15.0, 20.0, 29.0, 35.0, 46.0, 49.6, 50.0
TEST(Percentile, MatchesNumpyLinearOnSortedInput) {
  const std::vector<double> values{15, 20, 35, 40, 50};
  EXPECT_DOUBLE_EQ(percentile(values, 0), 15.0);
  EXPECT_DOUBLE_EQ(percentile(values, 25), 20.0);
  EXPECT_DOUBLE_EQ(percentile(values, 40), 29.0);
  EXPECT_DOUBLE_EQ(percentile(values, 50), 35.0);
  EXPECT_DOUBLE_EQ(percentile(values, 90), 46.0);
  EXPECT_DOUBLE_EQ(percentile(values, 99), 49.6);
  EXPECT_DOUBLE_EQ(percentile(values, 100), 50.0);
}

// np.percentile([3.5, 1.25, 9.0, 7.75, 2.0, 4.5, 6.0, 8.25], p) for
// p in (10, 33.3, 50, 90, 99) -> 1.775, 3.831, 5.25, 8.475, 8.9475
TEST(Percentile, MatchesNumpyLinearOnUnsortedInput) {
  const std::vector<double> values{3.5, 1.25, 9.0, 7.75, 2.0, 4.5, 6.0, 8.25};
  EXPECT_NEAR(percentile(values, 10), 1.775, 1e-12);
  EXPECT_NEAR(percentile(values, 33.3), 3.831, 1e-12);
  EXPECT_NEAR(percentile(values, 50), 5.25, 1e-12);
  EXPECT_NEAR(percentile(values, 90), 8.475, 1e-12);
  EXPECT_NEAR(percentile(values, 99), 8.9475, 1e-12);
}

TEST(Percentile, SingleValueIsEveryPercentile) {
  EXPECT_DOUBLE_EQ(percentile({42.0}, 0), 42.0);
  EXPECT_DOUBLE_EQ(percentile({42.0}, 73), 42.0);
  EXPECT_DOUBLE_EQ(percentile({42.0}, 100), 42.0);
}

TEST(Percentile, RejectsEmptySampleAndPercentOutOfRange) {
  EXPECT_THROW(percentile({}, 50), Error);
  EXPECT_THROW(percentile({1, 2}, -0.5), Error);
  EXPECT_THROW(percentile({1, 2}, 100.5), Error);
}

TEST(Describe, SummarizesSample) {
  // Sorted: 1 2 3 4 10. p90: rank 3.6 -> 4 + 0.6 * 6 = 7.6; p99: rank 3.96 -> 9.76.
  const Distribution d = describe({10, 2, 4, 1, 3});
  EXPECT_EQ(d.count, 5u);
  EXPECT_DOUBLE_EQ(d.mean, 4.0);
  EXPECT_DOUBLE_EQ(d.median, 3.0);
  EXPECT_DOUBLE_EQ(d.p90, 7.6);
  EXPECT_DOUBLE_EQ(d.p99, 9.76);
  EXPECT_DOUBLE_EQ(d.min, 1.0);
  EXPECT_DOUBLE_EQ(d.max, 10.0);
}

TEST(Describe, EmptySampleIsAllZeros) {
  const Distribution d = describe({});
  EXPECT_EQ(d.count, 0u);
  EXPECT_EQ(d.mean, 0.0);
  EXPECT_EQ(d.median, 0.0);
  EXPECT_EQ(d.p90, 0.0);
  EXPECT_EQ(d.p99, 0.0);
  EXPECT_EQ(d.min, 0.0);
  EXPECT_EQ(d.max, 0.0);
}

RequestRecord completed(int prompt_tokens, int output_tokens, double ttft, double latency,
                        std::vector<double> itl) {
  RequestRecord r;
  r.ok = true;
  r.status = 200;
  r.prompt_tokens = prompt_tokens;
  r.output_tokens = output_tokens;
  r.ttft = ttft;
  r.latency = latency;
  r.itl = std::move(itl);
  return r;
}

RequestRecord failed(int status, std::string error = "failed") {
  RequestRecord r;
  r.status = status;
  r.error = std::move(error);
  // Partial figures a failed request may carry; none may reach the summary.
  r.ttft = 5.0;
  r.latency = 9.0;
  r.prompt_tokens = 100;
  r.output_tokens = 3;
  r.itl = {5.0, 5.0};
  return r;
}

// Three completed requests and three failures, over a 2 s run:
//   A: prompt 5, 10 tokens, ttft 0.1, latency 1.0 -> TPOT 0.9 / 9 = 0.1; 9 gaps summing 0.9
//   B: prompt 7,  5 tokens, ttft 0.2, latency 1.0 -> TPOT 0.8 / 4 = 0.2; 4 gaps of 0.2
//   C: prompt 4,  1 token,  ttft 0.3, latency 0.3 -> no TPOT, no gaps
//   failures: 503, no response (0), 503
std::vector<RequestRecord> sample_run() {
  return {
      completed(5, 10, 0.1, 1.0, {0.05, 0.15, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1}),
      failed(503),
      completed(7, 5, 0.2, 1.0, {0.2, 0.2, 0.2, 0.2}),
      failed(0),
      completed(4, 1, 0.3, 0.3, {}),
      failed(503),
  };
}

TEST(Summarize, CountsAndThroughputsCoverCompletedRequestsOnly) {
  const auto records = sample_run();
  const RunSummary s = summarize(records, 2.0, Slo{});
  EXPECT_DOUBLE_EQ(s.duration_seconds, 2.0);
  EXPECT_EQ(s.requests, 6u);
  EXPECT_EQ(s.completed, 3u);
  EXPECT_EQ(s.failed, 3u);
  EXPECT_EQ(s.prompt_tokens, 5 + 7 + 4);
  EXPECT_EQ(s.output_tokens, 10 + 5 + 1);
  EXPECT_DOUBLE_EQ(s.request_throughput, 3 / 2.0);
  EXPECT_DOUBLE_EQ(s.output_throughput, 16 / 2.0);
  EXPECT_DOUBLE_EQ(s.total_token_throughput, 32 / 2.0);
  EXPECT_FALSE(s.goodput.has_value());
}

TEST(Summarize, CachedTokensAndTheirShareCoverCompletedRequestsOnly) {
  std::vector<RequestRecord> records = sample_run();
  records[0].cached_tokens = 4;  // A: 4 of its 5 prompt tokens
  records[2].cached_tokens = 3;  // B: 3 of 7
  records[1].cached_tokens = 9;  // a failure: not counted
  const RunSummary s = summarize(records, 2.0, Slo{});
  EXPECT_EQ(s.cached_tokens, 4 + 3);
  EXPECT_DOUBLE_EQ(s.cached_token_rate(), 7.0 / 16.0);
  EXPECT_DOUBLE_EQ(RunSummary{}.cached_token_rate(), 0.0);  // no prompt tokens
}

TEST(Summarize, FailuresAreCountedByStatus) {
  const auto records = sample_run();
  const RunSummary s = summarize(records, 2.0, Slo{});
  const std::map<int, size_t> expected{{0, 1}, {503, 2}};
  EXPECT_EQ(s.errors_by_status, expected);
}

// A count alone ("HTTP 400: 4") does not say what to fix; the first message
// of each status does (e.g. the server's context_length_exceeded).
TEST(Summarize, KeepsTheFirstErrorMessageOfEachStatus) {
  const std::vector<RequestRecord> records = {
      failed(400, "prompt (227 tokens) + max_tokens (64) exceed the model's context"),
      completed(5, 10, 0.1, 1.0, {0.1}),
      failed(0, "connection refused"),
      failed(400, "a later, different 400"),
  };
  const RunSummary s = summarize(records, 1.0, Slo{});
  const std::map<int, std::string> expected{
      {0, "connection refused"},
      {400, "prompt (227 tokens) + max_tokens (64) exceed the model's context"}};
  EXPECT_EQ(s.first_error_by_status, expected);
  EXPECT_TRUE(summarize(std::vector<RequestRecord>{completed(5, 10, 0.1, 1.0, {0.1})}, 1.0, Slo{})
                  .first_error_by_status.empty());
}

TEST(Summarize, LatencyDistributionsFollowVllmDefinitions) {
  const auto records = sample_run();
  const RunSummary s = summarize(records, 2.0, Slo{});
  // TTFT over completed: 0.1 0.2 0.3; p90 rank 1.8 -> 0.28.
  EXPECT_EQ(s.ttft.count, 3u);
  EXPECT_NEAR(s.ttft.mean, 0.2, 1e-12);
  EXPECT_NEAR(s.ttft.p90, 0.28, 1e-12);
  EXPECT_DOUBLE_EQ(s.ttft.max, 0.3);
  // TPOT only for A and B (C has one token).
  EXPECT_EQ(s.tpot.count, 2u);
  EXPECT_NEAR(s.tpot.min, 0.1, 1e-12);
  EXPECT_NEAR(s.tpot.max, 0.2, 1e-12);
  EXPECT_NEAR(s.tpot.mean, 0.15, 1e-12);
  // ITL pools the 9 + 4 gaps; the failures' 5 s gaps stay out.
  EXPECT_EQ(s.itl.count, 13u);
  EXPECT_NEAR(s.itl.mean, (0.9 + 0.8) / 13, 1e-12);
  EXPECT_DOUBLE_EQ(s.itl.min, 0.05);
  EXPECT_DOUBLE_EQ(s.itl.max, 0.2);
  // E2E: 1.0 1.0 0.3.
  EXPECT_EQ(s.e2e.count, 3u);
  EXPECT_NEAR(s.e2e.mean, 2.3 / 3, 1e-12);
  EXPECT_DOUBLE_EQ(s.e2e.median, 1.0);
  EXPECT_DOUBLE_EQ(s.e2e.min, 0.3);
}

TEST(Summarize, GoodputCountsRequestsMeetingEverySlo) {
  const auto records = sample_run();
  // Bounds in seconds, nullopt for none: ttft, tpot, e2e.
  auto goodput = [&](std::optional<double> ttft, std::optional<double> tpot,
                     std::optional<double> e2e) {
    return summarize(records, 2.0, Slo{ttft, tpot, e2e}).goodput.value();
  };
  EXPECT_DOUBLE_EQ(goodput(0.25, {}, {}), 2 / 2.0);  // A, B
  EXPECT_DOUBLE_EQ(goodput(0.1, {}, {}), 1 / 2.0);   // A: at the bound counts
  // A (0.1) and C (one token: TPOT counts as 0) meet 0.15; B (0.2) does not.
  EXPECT_DOUBLE_EQ(goodput({}, 0.15, {}), 2 / 2.0);
  EXPECT_DOUBLE_EQ(goodput({}, {}, 0.5), 1 / 2.0);  // C
  EXPECT_DOUBLE_EQ(goodput(0.25, 0.15, {}), 1 / 2.0);  // A
  EXPECT_DOUBLE_EQ(goodput(0.01, {}, {}), 0.0);
}

TEST(Summarize, EmptyRunIsAllZeros) {
  const RunSummary s = summarize({}, 0.0, Slo{{}, {}, 1.0});
  EXPECT_EQ(s.requests, 0u);
  EXPECT_EQ(s.completed, 0u);
  EXPECT_EQ(s.failed, 0u);
  EXPECT_TRUE(s.errors_by_status.empty());
  EXPECT_EQ(s.request_throughput, 0.0);
  EXPECT_EQ(s.output_throughput, 0.0);
  EXPECT_EQ(s.ttft.count, 0u);
  EXPECT_EQ(s.e2e.mean, 0.0);
  ASSERT_TRUE(s.goodput.has_value());
  EXPECT_EQ(*s.goodput, 0.0);
}

TEST(Summarize, ZeroDurationGivesZeroRatesAndNegativeDurationThrows) {
  const auto records = sample_run();
  const RunSummary s = summarize(records, 0.0, Slo{});
  EXPECT_EQ(s.completed, 3u);
  EXPECT_EQ(s.request_throughput, 0.0);
  EXPECT_EQ(s.total_token_throughput, 0.0);
  EXPECT_THROW(summarize(records, -1.0, Slo{}), Error);
}

}  // namespace
}  // namespace tandem::loadtest
