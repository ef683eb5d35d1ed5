// Tests of tools/loadtest/server_metrics_scrape.h: the Prometheus text parser
// (on hand-written text and on the exposition Tandem's own registry renders)
// and the speculation counters' deltas.
#include "tools/loadtest/server_metrics_scrape.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "common/error.h"
#include "coordinator/metrics/server_metrics.h"

namespace tandem::loadtest {
namespace {

TEST(ParsePrometheus, ReadsARealisticExposition) {
  const std::string text =
      "# HELP tandem_requests_total HTTP responses by route and status.\n"
      "# TYPE tandem_requests_total counter\n"
      "tandem_requests_total{route=\"/v1/completions\",status=\"200\"} 42\n"
      "tandem_requests_total{route=\"/v1/\\\"odd\\\" {route}, x\",status=\"404\"} 3\n"
      "# HELP tandem_kv_cache_blocks_used KV blocks in use.\n"
      "# TYPE tandem_kv_cache_blocks_used gauge\n"
      "tandem_kv_cache_blocks_used{model=\"target\"} 17\n"
      "tandem_kv_cache_blocks_used{model=\"draft\"} 2.5e-07\n"
      "\n"
      "# TYPE tandem_time_to_first_token_seconds histogram\n"
      "tandem_time_to_first_token_seconds_bucket{le=\"0.0005\"} 0\n"
      "tandem_time_to_first_token_seconds_bucket{le=\"0.1\"} 5\n"
      "tandem_time_to_first_token_seconds_bucket{le=\"+Inf\"} 9\n"
      "tandem_time_to_first_token_seconds_sum 1.375\n"
      "tandem_time_to_first_token_seconds_count 9\n"
      "tandem_spec_decode_acceptance_rate NaN\n"
      "tandem_spec_decode_cost_ratio -Inf\n"
      "tandem_max_value +Inf 1700000000000\r\n"
      "tandem_generation_tokens_total 1e+20";
  const auto samples = parse_prometheus(text);
  EXPECT_EQ(samples.size(), 13u);  // every line that is not a comment or blank
  EXPECT_EQ(samples.at("tandem_requests_total{route=\"/v1/completions\",status=\"200\"}"), 42);
  EXPECT_EQ(samples.at("tandem_requests_total{route=\"/v1/\\\"odd\\\" {route}, x\",status=\"404\"}"), 3);
  EXPECT_EQ(samples.at("tandem_kv_cache_blocks_used{model=\"target\"}"), 17);
  EXPECT_EQ(samples.at("tandem_kv_cache_blocks_used{model=\"draft\"}"), 2.5e-07);
  EXPECT_EQ(samples.at("tandem_time_to_first_token_seconds_bucket{le=\"0.0005\"}"), 0);
  EXPECT_EQ(samples.at("tandem_time_to_first_token_seconds_bucket{le=\"0.1\"}"), 5);
  EXPECT_EQ(samples.at("tandem_time_to_first_token_seconds_bucket{le=\"+Inf\"}"), 9);
  EXPECT_EQ(samples.at("tandem_time_to_first_token_seconds_sum"), 1.375);
  EXPECT_EQ(samples.at("tandem_time_to_first_token_seconds_count"), 9);
  EXPECT_TRUE(std::isnan(samples.at("tandem_spec_decode_acceptance_rate")));
  EXPECT_EQ(samples.at("tandem_spec_decode_cost_ratio"), -std::numeric_limits<double>::infinity());
  EXPECT_EQ(samples.at("tandem_max_value"), std::numeric_limits<double>::infinity());
  EXPECT_EQ(samples.at("tandem_generation_tokens_total"), 1e20);
}

TEST(ParsePrometheus, MalformedLinesNameTheirLineNumber) {
  const std::string good = "# TYPE a counter\na_total 1\n";
  for (const std::string bad : {"b_total{x=\"1\" 2", "b_total", "b_total twelve", "b_total 1.5.2",
                                "{x=\"1\"} 3", "b_total{x=\"\\\"} 1"}) {
    try {
      parse_prometheus(good + bad + "\n");
      FAIL() << "expected an Error for " << bad;
    } catch (const Error& error) {
      EXPECT_EQ(error.kind(), ErrorKind::corrupt_data);
      EXPECT_NE(std::string(error.what()).find("line 3"), std::string::npos) << error.what();
    }
  }
}

TEST(ParsePrometheus, ReadsBackWhatTandemsRegistryRenders) {
  metrics::ServerMetrics server;
  server.generation_tokens.inc(1234);
  server.target_steps.inc(321);
  server.record_draft(3, 4);
  server.record_draft(1, 4);
  server.kv_cache_blocks_used_target.set(77);
  server.requests("/v1/completions", 200).inc(5);
  server.time_to_first_token.observe(0.02);
  const auto samples = parse_prometheus(server.render());
  EXPECT_EQ(samples.at("tandem_generation_tokens_total"), 1234);
  EXPECT_EQ(samples.at("tandem_target_steps_total"), 321);
  EXPECT_EQ(samples.at("tandem_spec_decode_num_drafts_total"), 2);
  EXPECT_EQ(samples.at("tandem_spec_decode_num_draft_tokens_total"), 8);
  EXPECT_EQ(samples.at("tandem_spec_decode_num_accepted_tokens_total"), 4);
  EXPECT_EQ(samples.at("tandem_kv_cache_blocks_used{model=\"target\"}"), 77);
  EXPECT_EQ(samples.at("tandem_spec_decode_num_accepted_tokens_per_pos_total{position=\"0\"}"), 2);
  EXPECT_EQ(samples.at("tandem_time_to_first_token_seconds_count"), 1);
}

TEST(ParsePrometheus, AModelNameLabelIsAlsoReadWithoutIt) {
  const std::string text =
      "tandem_generation_tokens_total{model_name=\"m\"} 7\n"
      "tandem_request_success_total{model_name=\"m\",finished_reason=\"stop\"} 2\n"
      "tandem_kv_cache_usage_perc{model=\"target\",model_name=\"a \\\"q\\\" ,b\"} 0.5\n"
      "tandem_x{my_model_name=\"m\"} 3\n";
  const auto samples = parse_prometheus(text);
  EXPECT_EQ(samples.at("tandem_generation_tokens_total{model_name=\"m\"}"), 7);
  EXPECT_EQ(samples.at("tandem_generation_tokens_total"), 7);
  EXPECT_EQ(samples.at("tandem_request_success_total{finished_reason=\"stop\"}"), 2);
  EXPECT_EQ(samples.at("tandem_kv_cache_usage_perc{model=\"target\"}"), 0.5);
  EXPECT_EQ(samples.count("tandem_x"), 0u);  // another label that only ends in model_name
  EXPECT_EQ(samples.size(), 7u);
}

std::map<std::string, double> speculation_counters(double drafts, double draft_tokens, double accepted,
                                                   double steps, double generated) {
  return {{"tandem_spec_decode_num_drafts_total", drafts},
          {"tandem_spec_decode_num_draft_tokens_total", draft_tokens},
          {"tandem_spec_decode_num_accepted_tokens_total", accepted},
          {"tandem_target_steps_total", steps},
          {"tandem_generation_tokens_total", generated},
          {"tandem_spec_decode_acceptance_rate", 0.9}};
}

TEST(SpeculationDelta, SubtractsTheScrapeBeforeFromTheOneAfter) {
  const auto before = speculation_counters(10, 40, 30, 20, 100);
  const auto after = speculation_counters(60, 240, 180, 70, 350);
  const SpeculationDelta delta = speculation_delta(before, after);
  EXPECT_EQ(delta.drafts, 50);
  EXPECT_EQ(delta.draft_tokens, 200);
  EXPECT_EQ(delta.accepted_tokens, 150);
  EXPECT_EQ(delta.target_steps, 50);
  EXPECT_EQ(delta.generation_tokens, 250);
  EXPECT_DOUBLE_EQ(delta.acceptance_rate(), 150.0 / 200.0);
  EXPECT_DOUBLE_EQ(delta.accepted_per_draft(), 150.0 / 50.0);
  EXPECT_DOUBLE_EQ(delta.tokens_per_target_step(), 250.0 / 50.0);
}

TEST(SpeculationDelta, PipeliningFiguresComeFromTheirCounters) {
  // As the server writes them (labels included), in one parse of a page.
  const auto page = [](double step, double busy, double target, double hits, double misses,
                       double ahead_steps) {
    return "tandem_engine_step_seconds_total " + std::to_string(step) +
           "\ntandem_draft_busy_seconds_total " + std::to_string(busy) +
           "\ntandem_target_seconds_total " + std::to_string(target) +
           "\ntandem_draft_ahead_total{result=\"hit\"} " + std::to_string(hits) +
           "\ntandem_draft_ahead_total{result=\"miss\"} " + std::to_string(misses) +
           "\ntandem_pipeline_steps_total{shape=\"plain\"} 7" +
           "\ntandem_pipeline_steps_total{shape=\"ahead\"} " + std::to_string(ahead_steps) +
           "\ntandem_pipeline_steps_total{shape=\"pingpong\"} 2\n";
  };
  const SpeculationDelta delta = speculation_delta(parse_prometheus(page(1, 0.5, 0.5, 1, 1, 3)),
                                                   parse_prometheus(page(11, 4.5, 8.5, 7, 3, 13)));
  EXPECT_DOUBLE_EQ(delta.draft_busy_fraction(), 4.0 / 10.0);
  EXPECT_DOUBLE_EQ(delta.target_busy_fraction(), 8.0 / 10.0);
  EXPECT_DOUBLE_EQ(delta.ahead_hit_rate(), 6.0 / 8.0);
  EXPECT_DOUBLE_EQ(delta.pipelined_steps, 10);  // ahead 3 -> 13, ping-pong unchanged
}

TEST(SpeculationDelta, PeerServerWithoutTheCountersGivesZeros) {
  const std::map<std::string, double> peer = {{"vllm:generation_tokens_total", 500}};
  const SpeculationDelta delta = speculation_delta(peer, peer);
  EXPECT_EQ(delta.drafts, 0);
  EXPECT_EQ(delta.generation_tokens, 0);
  EXPECT_EQ(delta.acceptance_rate(), 0);
  EXPECT_EQ(delta.accepted_per_draft(), 0);
  EXPECT_EQ(delta.tokens_per_target_step(), 0);
}

TEST(SpeculationDelta, MissingBeforeCountsAsZeroAndAResetCountsFromZero) {
  const SpeculationDelta from_nothing = speculation_delta({}, speculation_counters(4, 16, 8, 6, 12));
  EXPECT_EQ(from_nothing.draft_tokens, 16);
  EXPECT_DOUBLE_EQ(from_nothing.acceptance_rate(), 0.5);
  EXPECT_DOUBLE_EQ(from_nothing.tokens_per_target_step(), 2);

  // The server restarted between the scrapes: its counters began again at 0.
  const SpeculationDelta after_reset =
      speculation_delta(speculation_counters(100, 400, 300, 200, 900), speculation_counters(2, 8, 6, 3, 9));
  EXPECT_EQ(after_reset.drafts, 2);
  EXPECT_EQ(after_reset.accepted_tokens, 6);
  EXPECT_DOUBLE_EQ(after_reset.tokens_per_target_step(), 3);
}

TEST(SpeculationDelta, NoDraftsMeansNoAcceptanceButStepsStillCount) {
  const SpeculationDelta plain =
      speculation_delta(speculation_counters(5, 20, 10, 10, 30), speculation_counters(5, 20, 10, 40, 60));
  EXPECT_EQ(plain.acceptance_rate(), 0);
  EXPECT_EQ(plain.accepted_per_draft(), 0);
  EXPECT_DOUBLE_EQ(plain.tokens_per_target_step(), 1);
}

// The prefix caches' counters, read from an exposition as the server writes
// it (model_name and model labels), per cache: hit rate = hits / queries.
TEST(PrefixCacheDelta, HitRatesPerCacheFromTheScrapes) {
  const auto scrape = [](int target_queries, int target_hits, int draft_queries, int draft_hits) {
    const std::string name = "{model_name=\"m\",model=";
    return parse_prometheus(
        "# TYPE tandem_prefix_cache_queries_total counter\n"
        "tandem_prefix_cache_queries_total" + name + "\"target\"} " + std::to_string(target_queries) + "\n" +
        "tandem_prefix_cache_queries_total" + name + "\"draft\"} " + std::to_string(draft_queries) + "\n" +
        "tandem_prefix_cache_hits_total" + name + "\"target\"} " + std::to_string(target_hits) + "\n" +
        "tandem_prefix_cache_hits_total" + name + "\"draft\"} " + std::to_string(draft_hits) + "\n");
  };
  const PrefixCacheDelta delta = prefix_cache_delta(scrape(100, 40, 90, 30), scrape(1100, 840, 990, 480));
  EXPECT_EQ(delta.target_queries, 1000);
  EXPECT_EQ(delta.target_hits, 800);
  EXPECT_EQ(delta.draft_queries, 900);
  EXPECT_EQ(delta.draft_hits, 450);
  EXPECT_DOUBLE_EQ(delta.target_hit_rate(), 0.8);
  EXPECT_DOUBLE_EQ(delta.draft_hit_rate(), 0.5);

  // A server without prefix caching metrics (a peer, or an older Tandem).
  const PrefixCacheDelta none = prefix_cache_delta({}, {{"tandem_target_steps_total", 5}});
  EXPECT_EQ(none.target_queries, 0);
  EXPECT_EQ(none.target_hit_rate(), 0);
  EXPECT_EQ(none.draft_hit_rate(), 0);
}

}  // namespace
}  // namespace tandem::loadtest
