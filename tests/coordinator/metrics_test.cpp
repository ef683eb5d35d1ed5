// Tests of coordinator/metrics/: the exposition format pieces, the Registry's
// rendering and rules, lock-free updates under contention, and ServerMetrics
// as promtool sees it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <vector>

#include "common/error.h"
#include "coordinator/metrics/exposition_format.h"
#include "coordinator/metrics/registry.h"
#include "coordinator/metrics/server_metrics.h"

namespace tandem::metrics {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// ---- exposition format -----------------------------------------------------

TEST(ExpositionFormat, IntegersPrintWithoutFractionOrExponent) {
  EXPECT_EQ(format_number(0), "0");
  EXPECT_EQ(format_number(-0.0), "0");
  EXPECT_EQ(format_number(1), "1");
  EXPECT_EQ(format_number(-42), "-42");
  EXPECT_EQ(format_number(1e6), "1000000");
  EXPECT_EQ(format_number(123456789012345), "123456789012345");
  EXPECT_EQ(format_number(1e15), "1e+15");
}

TEST(ExpositionFormat, OtherNumbersPrintShortestRoundTrip) {
  EXPECT_EQ(format_number(0.1), "0.1");
  EXPECT_EQ(format_number(-3.5), "-3.5");
  EXPECT_EQ(format_number(0.0025), "0.0025");
  EXPECT_EQ(format_number(0.0005), "0.0005");
  EXPECT_EQ(format_number(1e-4), "0.0001");
  EXPECT_EQ(format_number(5e-5), "5e-05");
  EXPECT_EQ(format_number(123456.789), "123456.789");
  EXPECT_EQ(format_number(2.5e-7), "2.5e-07");
  EXPECT_EQ(format_number(1e20), "1e+20");
  for (const double value : {1.0 / 3, 0.1 + 0.2, 6.02214076e23, 1e-300, 123456.789, 1e15, -7e-5}) {
    const std::string text = format_number(value);
    EXPECT_EQ(std::strtod(text.c_str(), nullptr), value) << text;
  }
}

TEST(ExpositionFormat, SpecialValuesSpelledAsPrometheusExpects) {
  EXPECT_EQ(format_number(kInf), "+Inf");
  EXPECT_EQ(format_number(-kInf), "-Inf");
  EXPECT_EQ(format_number(std::nan("")), "NaN");
}

TEST(ExpositionFormat, EscapesLabelValuesAndHelp) {
  EXPECT_EQ(escape_label_value(R"(a\b"c)" "\n" "d"), R"(a\\b\"c\nd)");
  EXPECT_EQ(escape_help(R"(a\b"c)" "\n" "d"), R"(a\\b"c\nd)");
  EXPECT_EQ(escape_label_value("plain /v1/completions"), "plain /v1/completions");
}

TEST(ExpositionFormat, NameGrammar) {
  for (const char* good : {"a", "_x", "tandem_requests_total", "ns:rule:rate5m", "A9_b"}) {
    EXPECT_TRUE(is_valid_metric_name(good)) << good;
  }
  for (const char* bad : {"", "9a", "a-b", "a b", "a.b", "é"}) {
    EXPECT_FALSE(is_valid_metric_name(bad)) << bad;
  }
  for (const char* good : {"route", "_x", "le", "finished_reason2"}) {
    EXPECT_TRUE(is_valid_label_name(good)) << good;
  }
  for (const char* bad : {"", "__name__", "a:b", "1a", "a-b"}) {
    EXPECT_FALSE(is_valid_label_name(bad)) << bad;
  }
}

TEST(ExpositionFormat, Utf8Validation) {
  EXPECT_TRUE(is_valid_utf8("ascii"));
  EXPECT_TRUE(is_valid_utf8("\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"));  // é € 😀
  EXPECT_FALSE(is_valid_utf8("\xC3"));              // truncated
  EXPECT_FALSE(is_valid_utf8("\xC0\xAF"));          // overlong '/'
  EXPECT_FALSE(is_valid_utf8("\xED\xA0\x80"));      // surrogate
  EXPECT_FALSE(is_valid_utf8("\xF4\x90\x80\x80"));  // past U+10FFFF
  EXPECT_FALSE(is_valid_utf8("\xFF"));
}

// ---- registry rendering ----------------------------------------------------

TEST(Registry, RendersCounterAndGauge) {
  Registry registry;
  registry.counter("jobs_total", "Jobs done.").inc(3);
  Gauge& depth = registry.gauge("queue_depth", "Jobs waiting.");
  depth.set(10);
  depth.dec(2.5);
  depth.inc();
  EXPECT_EQ(registry.render(),
            "# HELP jobs_total Jobs done.\n"
            "# TYPE jobs_total counter\n"
            "jobs_total 3\n"
            "# HELP queue_depth Jobs waiting.\n"
            "# TYPE queue_depth gauge\n"
            "queue_depth 8.5\n");
}

TEST(Registry, GroupsLabelledSeriesUnderOneFamily) {
  Registry registry;
  const auto requests = [&](const char* route, const char* status) -> Counter& {
    return registry.counter("http_total", "Responses.", {{"route", route}, {"status", status}});
  };
  requests("/a", "200").inc();
  registry.gauge("other", "Interleaved.").set(1);
  requests("/b", "404").inc(2);
  requests("/a", "200").inc();
  EXPECT_EQ(registry.render(),
            "# HELP http_total Responses.\n"
            "# TYPE http_total counter\n"
            "http_total{route=\"/a\",status=\"200\"} 2\n"
            "http_total{route=\"/b\",status=\"404\"} 2\n"
            "# HELP other Interleaved.\n"
            "# TYPE other gauge\n"
            "other 1\n");
}

TEST(Registry, RendersHistogramBucketsCumulative) {
  Registry registry;
  Histogram& latency = registry.histogram("latency_seconds", "Latency.", {0.1, 0.5, 1}, {{"op", "x"}});
  for (const double value : {0.05, 0.1, 0.3, 0.7, 2.0, 3.0}) latency.observe(value);
  EXPECT_EQ(registry.render(),
            "# HELP latency_seconds Latency.\n"
            "# TYPE latency_seconds histogram\n"
            "latency_seconds_bucket{op=\"x\",le=\"0.1\"} 2\n"
            "latency_seconds_bucket{op=\"x\",le=\"0.5\"} 3\n"
            "latency_seconds_bucket{op=\"x\",le=\"1\"} 4\n"
            "latency_seconds_bucket{op=\"x\",le=\"+Inf\"} 6\n"
            "latency_seconds_sum{op=\"x\"} 6.15\n"
            "latency_seconds_count{op=\"x\"} 6\n");
  const HistogramSnapshot snapshot = latency.snapshot();
  EXPECT_EQ(snapshot.cumulative_counts.back(), snapshot.count);
}

TEST(Registry, HistogramPutsNanAndLargeValuesInInfOnly) {
  Registry registry;
  Histogram& tokens = registry.histogram("step_tokens", "Tokens.", {1, 2});
  tokens.observe(std::nan(""));
  tokens.observe(1e9);
  tokens.observe(2);
  const HistogramSnapshot snapshot = tokens.snapshot();
  EXPECT_EQ(snapshot.cumulative_counts, (std::vector<std::uint64_t>{0, 1, 3}));
  EXPECT_EQ(snapshot.count, 3u);
  EXPECT_TRUE(std::isnan(snapshot.sum));
  EXPECT_NE(registry.render().find("step_tokens_sum NaN\n"), std::string::npos);
}

TEST(Registry, EscapesLabelValuesAndHelpInOutput) {
  Registry registry;
  registry.gauge("g", "Line one\nback\\slash \"quoted\".", {{"path", "a\"b\\c\nd"}}).set(1);
  EXPECT_EQ(registry.render(),
            "# HELP g Line one\\nback\\\\slash \"quoted\".\n"
            "# TYPE g gauge\n"
            "g{path=\"a\\\"b\\\\c\\nd\"} 1\n");
}

// ---- registry rules --------------------------------------------------------

TEST(Registry, SameNameAndLabelsGiveSameObject) {
  Registry registry;
  Counter& first = registry.counter("c_total", "C.", {{"k", "v"}});
  EXPECT_EQ(&first, &registry.counter("c_total", "C.", {{"k", "v"}}));
  EXPECT_NE(&first, &registry.counter("c_total", "C.", {{"k", "w"}}));
  Histogram& histogram = registry.histogram("h", "H.", {1, 2});
  EXPECT_EQ(&histogram, &registry.histogram("h", "H.", {1, 2}));
}

void expect_invalid(const std::function<void()>& call, const std::string& message_part) {
  try {
    call();
    FAIL() << "expected an Error mentioning '" << message_part << "'";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::invalid_argument);
    EXPECT_NE(std::string(error.what()).find(message_part), std::string::npos) << error.what();
  }
}

TEST(Registry, RejectsConflictingRegistrations) {
  Registry registry;
  registry.counter("c_total", "C.", {{"k", "v"}});
  registry.histogram("h_seconds", "H.", {1, 2});
  const std::string before = registry.render();

  expect_invalid([&] { registry.gauge("c_total", "C.", {{"k", "v"}}); }, "type counter");
  expect_invalid([&] { registry.counter("c_total", "Other.", {{"k", "v"}}); }, "help");
  expect_invalid([&] { registry.counter("c_total", "C.", {{"j", "v"}}); }, "label names {k}");
  expect_invalid([&] { registry.counter("c_total", "C."); }, "label names {k}");
  expect_invalid([&] { registry.histogram("h_seconds", "H.", {1, 3}); }, "bucket bounds");
  expect_invalid([&] { registry.counter("h_seconds_count", "X."); }, "histogram h_seconds");
  expect_invalid([&] { registry.gauge("h_seconds_bucket", "X."); }, "histogram h_seconds");
  registry.gauge("q_sum", "Q.").set(1);
  expect_invalid([&] { registry.histogram("q", "Q.", {1}); }, "q_sum");
  EXPECT_EQ(registry.render(), before + "# HELP q_sum Q.\n# TYPE q_sum gauge\nq_sum 1\n");
}

TEST(Registry, RejectsInvalidNamesAndLabelsChangingNothing) {
  Registry registry;
  expect_invalid([&] { registry.counter("bad-name_total", "B."); }, "bad-name_total");
  expect_invalid([&] { registry.counter("", "B."); }, "metric name");
  expect_invalid([&] { registry.counter("ok_total", "B.", {{"bad label", "v"}}); }, "bad label");
  expect_invalid([&] { registry.counter("ok_total", "B.", {{"__name__", "v"}}); }, "__name__");
  expect_invalid([&] { registry.counter("ok_total", "B.", {{"a", "1"}, {"a", "2"}}); }, "twice");
  expect_invalid([&] { registry.counter("ok_total", "B.", {{"a", "\xFF"}}); }, "UTF-8");
  expect_invalid([&] { registry.counter("ok_total", "\xC3"); }, "UTF-8");
  expect_invalid([&] { registry.histogram("h", "H.", {1}, {{"le", "x"}}); }, "'le'");
  expect_invalid([&] { registry.histogram("h", "H.", {2, 1}); }, "strictly increasing");
  expect_invalid([&] { registry.histogram("h", "H.", {1, kInf}); }, "not finite");
  EXPECT_EQ(registry.render(), "");
}

TEST(Registry, CounterNeverGoesDown) {
  Registry registry;
  Counter& counter = registry.counter("c_total", "C.");
  counter.inc(2);
  EXPECT_THROW(counter.inc(-1), Error);
  EXPECT_THROW(counter.inc(std::nan("")), Error);
  EXPECT_EQ(counter.value(), 2);
}

// ---- concurrency -----------------------------------------------------------

TEST(Registry, ConcurrentUpdatesSumExactlyWhileRendering) {
  constexpr int kThreads = 8;
  constexpr int kUpdatesPerThread = 20000;
  Registry registry;
  Counter& counter = registry.counter("c_total", "C.");
  Gauge& gauge = registry.gauge("g", "G.");
  Histogram& histogram = registry.histogram("h", "H.", {1, 2, 3});

  std::atomic<bool> done{false};
  std::thread renderer([&] {
    while (!done.load()) {
      // Mid-flight, +Inf must already equal _count: both come from one read.
      const HistogramSnapshot snapshot = histogram.snapshot();
      EXPECT_EQ(snapshot.cumulative_counts.back(), snapshot.count);
      EXPECT_FALSE(registry.render().empty());
    }
  });
  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t) {
    workers.emplace_back([&, t] {
      // Each thread also looks its labelled series up, racing the others.
      Counter& mine = registry.counter("per_thread_total", "P.", {{"parity", t % 2 ? "odd" : "even"}});
      for (int i = 0; i < kUpdatesPerThread; ++i) {
        counter.inc();
        mine.inc(0.5);
        gauge.inc(2);
        gauge.dec();
        histogram.observe(i % 4);  // 0, 1, 2, 3: one per bucket
      }
    });
  }
  for (std::thread& worker : workers) worker.join();
  done.store(true);
  renderer.join();

  constexpr double kTotal = double(kThreads) * kUpdatesPerThread;
  EXPECT_EQ(counter.value(), kTotal);
  EXPECT_EQ(gauge.value(), kTotal);
  EXPECT_EQ(registry.counter("per_thread_total", "P.", {{"parity", "odd"}}).value(), kTotal / 4);
  const HistogramSnapshot snapshot = histogram.snapshot();
  EXPECT_EQ(snapshot.count, static_cast<std::uint64_t>(kTotal));
  EXPECT_EQ(snapshot.sum, kTotal / 4 * (0 + 1 + 2 + 3));
  const std::uint64_t quarter = static_cast<std::uint64_t>(kTotal / 4);
  EXPECT_EQ(snapshot.cumulative_counts, (std::vector<std::uint64_t>{2 * quarter, 3 * quarter,
                                                                     4 * quarter, 4 * quarter}));
}

// ---- ServerMetrics ---------------------------------------------------------

TEST(ServerMetrics, RecordsAcceptedPositions) {
  ServerMetrics metrics;
  metrics.record_draft(2, 4);
  metrics.record_draft(0, 3);
  metrics.record_draft(4, 4);
  const std::string text = metrics.render();
  const std::string name = "tandem_spec_decode_num_accepted_tokens_per_pos_total";
  EXPECT_NE(text.find(name + "{position=\"0\"} 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find(name + "{position=\"1\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find(name + "{position=\"2\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find(name + "{position=\"3\"} 1\n"), std::string::npos);
  EXPECT_EQ(text.find(name + "{position=\"4\"}"), std::string::npos);
  EXPECT_EQ(metrics.spec_decode_num_drafts.value(), 3);
  EXPECT_EQ(metrics.spec_decode_num_draft_tokens.value(), 11);
  EXPECT_EQ(metrics.spec_decode_num_accepted_tokens.value(), 6);

  metrics.record_accepted_positions(70, 80);  // past the cap: positions 0..63 only
  const std::string capped = metrics.render();
  EXPECT_NE(capped.find(name + "{position=\"63\"} 1\n"), std::string::npos);
  EXPECT_EQ(capped.find(name + "{position=\"64\"}"), std::string::npos);
  EXPECT_THROW(metrics.record_accepted_positions(3, 2), Error);
  EXPECT_THROW(metrics.record_accepted_positions(-1, 2), Error);
}

TEST(ServerMetrics, HelpersValidateTheirLabels) {
  ServerMetrics metrics;
  EXPECT_EQ(&metrics.requests("/v1/completions", 200), &metrics.requests("/v1/completions", 200));
  EXPECT_THROW(metrics.requests("/v1/completions", 99), Error);
  EXPECT_THROW(metrics.requests("/v1/completions", 600), Error);
  metrics.request_success("timeout").inc();
  EXPECT_EQ(metrics.request_success("timeout").value(), 1);
  EXPECT_EQ(metrics.request_success("stop").value(), 0);
  EXPECT_THROW(metrics.request_success("running"), Error);
}

// Records something in every metric the server reports.
void exercise(ServerMetrics& metrics) {
  metrics.requests("/v1/completions", 200).inc();
  metrics.requests("/v1/completions", 400).inc();
  metrics.requests("/metrics", 200).inc(3);
  metrics.prompt_tokens.inc(1234);
  metrics.generation_tokens.inc(567);
  for (const std::string_view reason : kFinishedReasons) metrics.request_success(reason).inc();
  metrics.time_to_first_token.observe(0.042);
  metrics.time_per_output_token.observe(0.0031);
  metrics.e2e_request_latency.observe(1.7);
  metrics.request_queue_time.observe(0.002);
  metrics.request_prefill_time.observe(0.04);
  metrics.request_decode_time.observe(1.658);
  metrics.request_prompt_tokens.observe(1234);
  metrics.request_generation_tokens.observe(567);
  metrics.kv_cache_usage("target").set(0.25);
  metrics.kv_cache_usage("draft").set(0.5);
  metrics.num_requests_waiting.set(3);
  metrics.num_requests_running.set(8);
  metrics.num_preemptions.inc();
  metrics.kv_cache_blocks_used_target.set(100);
  metrics.kv_cache_blocks_free_target.set(924);
  metrics.kv_cache_blocks_used_draft.set(40);
  metrics.kv_cache_blocks_free_draft.set(984);
  metrics.record_draft(3, 5);
  metrics.spec_decode_acceptance_rate.set(0.71);
  metrics.spec_decode_cost_ratio.set(0.05);
  metrics.spec_decode_mean_gamma.set(4.5);
  metrics.spec_decode_predicted_speedup.set(1.75);
  metrics.spec_decode_measured_speedup.set(1.5);
  metrics.target_steps.inc();
  metrics.target_step_tokens.observe(48);
}

TEST(ServerMetrics, ReportsEveryMetricUnderItsName) {
  ServerMetrics metrics;
  exercise(metrics);
  const std::string text = metrics.render();
  for (const char* sample : {
           "tandem_requests_total{route=\"/v1/completions\",status=\"400\"} 1\n",
           "tandem_requests_total{route=\"/metrics\",status=\"200\"} 3\n",
           "tandem_prompt_tokens_total{model_name=\"tandem\"} 1234\n",
           "tandem_generation_tokens_total{model_name=\"tandem\"} 567\n",
           "tandem_request_success_total{model_name=\"tandem\",finished_reason=\"context\"} 1\n",
           "tandem_time_to_first_token_seconds_count{model_name=\"tandem\"} 1\n",
           "tandem_time_per_output_token_seconds_sum{model_name=\"tandem\"} 0.0031\n",
           "tandem_e2e_request_latency_seconds_bucket{model_name=\"tandem\",le=\"2.5\"} 1\n",
           "tandem_request_queue_time_seconds_bucket{model_name=\"tandem\",le=\"0.0025\"} 1\n",
           "tandem_request_prefill_time_seconds_sum{model_name=\"tandem\"} 0.04\n",
           "tandem_request_decode_time_seconds_count{model_name=\"tandem\"} 1\n",
           "tandem_request_prompt_tokens_bucket{model_name=\"tandem\",le=\"2000\"} 1\n",
           "tandem_request_prompt_tokens_bucket{model_name=\"tandem\",le=\"1000\"} 0\n",
           "tandem_request_generation_tokens_sum{model_name=\"tandem\"} 567\n",
           "tandem_kv_cache_usage_perc{model_name=\"tandem\",model=\"target\"} 0.25\n",
           "tandem_kv_cache_usage_perc{model_name=\"tandem\",model=\"draft\"} 0.5\n",
           "tandem_num_requests_waiting{model_name=\"tandem\"} 3\n",
           "tandem_num_requests_running{model_name=\"tandem\"} 8\n",
           "tandem_num_preemptions_total 1\n",
           "tandem_kv_cache_blocks_used{model=\"target\"} 100\n",
           "tandem_kv_cache_blocks_free{model=\"draft\"} 984\n",
           "tandem_spec_decode_num_drafts_total 1\n",
           "tandem_spec_decode_num_draft_tokens_total 5\n",
           "tandem_spec_decode_num_accepted_tokens_total 3\n",
           "tandem_spec_decode_num_accepted_tokens_per_pos_total{position=\"4\"} 0\n",
           "tandem_spec_decode_acceptance_rate 0.71\n",
           "tandem_spec_decode_cost_ratio 0.05\n",
           "tandem_spec_decode_mean_gamma 4.5\n",
           "tandem_spec_decode_predicted_speedup 1.75\n",
           "tandem_spec_decode_measured_speedup 1.5\n",
           "tandem_target_steps_total 1\n",
           "tandem_target_step_tokens_bucket{le=\"32\"} 0\n",
           "tandem_target_step_tokens_bucket{le=\"64\"} 1\n",
       }) {
    EXPECT_NE(text.find(sample), std::string::npos) << "missing: " << sample << "in:\n" << text;
  }
}

// Runs `promtool check metrics` on exposition; returns its exit status and
// everything it printed.
std::pair<int, std::string> promtool_check(const std::string& exposition) {
  const std::filesystem::path file = std::filesystem::path(::testing::TempDir()) /
                                     ("tandem_metrics_" + std::to_string(::getpid()) + ".txt");
  std::ofstream(file) << exposition;
  const std::string command = "promtool check metrics < '" + file.string() + "' 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  std::string output;
  if (pipe != nullptr) {
    char buffer[4096];
    while (const std::size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) output.append(buffer, n);
  }
  const int status = pipe != nullptr ? ::pclose(pipe) : -1;
  std::filesystem::remove(file);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

bool promtool_installed() { return std::system("command -v promtool >/dev/null 2>&1") == 0; }

TEST(ServerMetrics, PromtoolAcceptsTheExposition) {
  ASSERT_TRUE(promtool_installed())
      << "promtool not found on PATH: install the Debian package `prometheus` "
         "(apt-get install prometheus), which provides /usr/bin/promtool";

  // The check itself must be able to fail: a counter without _total and a
  // colon in a name are both lint problems.
  const auto [bad_status, bad_output] =
      promtool_check("# HELP bad:requests Bad.\n# TYPE bad:requests counter\nbad:requests 1\n");
  EXPECT_NE(bad_status, 0);
  EXPECT_NE(bad_output.find("_total"), std::string::npos) << bad_output;

  ServerMetrics metrics;
  exercise(metrics);
  const std::string exposition = metrics.render();
  const auto [status, output] = promtool_check(exposition);
  EXPECT_EQ(status, 0) << output << "\nexposition:\n" << exposition;
  EXPECT_EQ(output, "") << "promtool lint problems:\n" << output;
}

TEST(ServerMetrics, ContentTypeIsTextFormat004) {
  EXPECT_EQ(kContentType, "text/plain; version=0.0.4; charset=utf-8");
}

}  // namespace
}  // namespace tandem::metrics
