// The metrics dashboards built for vLLM read (docs/serving.md, "Metrics"):
// a model_name label on the request, token and scheduler series; the KV
// caches' usage as a fraction; per-request histograms of the queue, prefill
// and decode phases and of prompt and generated tokens, each counting every
// request once and summing what the responses' usage says.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <string>
#include <thread>

#include "tests/server/test_server.h"
#include "tests/support/eventually.h"

namespace tandem {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;
using test_support::eventually;
using test_support::HttpClient;
using test_support::TestServer;
using test_support::TinyDeployment;

TEST(DashboardMetrics, PerRequestHistogramsCountEveryRequestAndSumItsUsage) {
  TinyDeployment deployment;
  deployment.server = "  served_model_name: tiny-pair\n";
  TestServer server(deployment);
  const std::vector<json> bodies = {
      {{"prompt", "The old man"}, {"max_tokens", 7}, {"ignore_eos", true}},
      {{"prompt", "Once upon a time there was"}, {"max_tokens", 20}, {"ignore_eos", true}},
      {{"prompt", "hi"}, {"max_tokens", 1}, {"ignore_eos", true}, {"speculation", {{"gamma", 0}}}},
  };
  int prompt_tokens = 0, completion_tokens = 0;
  for (const json& body : bodies) {
    const json reply = server.complete(body);
    prompt_tokens += reply["usage"]["prompt_tokens"].get<int>();
    completion_tokens += reply["usage"]["completion_tokens"].get<int>();
  }
  const double requests = static_cast<double>(bodies.size());
  for (const char* phase : {"queue", "prefill", "decode"})
    EXPECT_EQ(server.metric(std::string("tandem_request_") + phase + "_time_seconds_count"), requests)
        << phase;
  EXPECT_EQ(server.metric("tandem_request_prompt_tokens_count"), requests);
  EXPECT_EQ(server.metric("tandem_request_generation_tokens_count"), requests);
  EXPECT_EQ(server.metric("tandem_request_prompt_tokens_sum"), prompt_tokens);
  EXPECT_EQ(server.metric("tandem_request_generation_tokens_sum"), completion_tokens);
  EXPECT_EQ(server.metric("tandem_prompt_tokens_total"), prompt_tokens);
  EXPECT_EQ(server.metric("tandem_generation_tokens_total"), completion_tokens);
  // The phases split each request's time: queue + prefill is its time to
  // first token, and all three its whole latency.
  const double queue = server.metric("tandem_request_queue_time_seconds_sum");
  const double prefill = server.metric("tandem_request_prefill_time_seconds_sum");
  const double decode = server.metric("tandem_request_decode_time_seconds_sum");
  EXPECT_GE(queue, 0);
  EXPECT_GT(prefill, 0);
  EXPECT_GT(decode, 0);
  EXPECT_NEAR(queue + prefill, server.metric("tandem_time_to_first_token_seconds_sum"), 1e-6);
  EXPECT_NEAR(queue + prefill + decode, server.metric("tandem_e2e_request_latency_seconds_sum"), 1e-6);

  // Every request and token series carries the served model's name.
  const std::string text = HttpClient(server.port()).send("GET", "/metrics").body;
  for (const char* series :
       {"tandem_prompt_tokens_total{model_name=\"tiny-pair\"} ",
        "tandem_generation_tokens_total{model_name=\"tiny-pair\"} ",
        "tandem_request_success_total{model_name=\"tiny-pair\",finished_reason=\"length\"} 3",
        "tandem_time_to_first_token_seconds_count{model_name=\"tiny-pair\"} 3",
        "tandem_e2e_request_latency_seconds_count{model_name=\"tiny-pair\"} 3",
        "tandem_request_queue_time_seconds_count{model_name=\"tiny-pair\"} 3",
        "tandem_request_prompt_tokens_bucket{model_name=\"tiny-pair\",le=\"+Inf\"} 3",
        "tandem_num_requests_running{model_name=\"tiny-pair\"} ",
        "tandem_kv_cache_usage_perc{model_name=\"tiny-pair\",model=\"target\"} "}) {
    EXPECT_NE(text.find("\n" + std::string(series)), std::string::npos) << series;
  }
}

// The caches the coordinator reports: in an MPI job the draft's cache lives
// on the draft rank, which reports none.
std::vector<std::string> reported_caches() {
  if (test_support::mpi_test_ranks() > 0) return {"target"};
  return {"target", "draft"};
}

TEST(DashboardMetrics, KvCacheUsageIsAFractionThatReturnsToIdle) {
  TestServer server;
  for (const std::string& model : reported_caches())
    EXPECT_EQ(server.metric(std::string("tandem_kv_cache_usage_perc{model=\"") + model + "\"}"), 0)
        << model;
  HttpClient streaming(server.port());
  const std::string body =
      R"({"prompt": "The", "max_tokens": 200, "temperature": 0, "stream": true, "ignore_eos": true,)"
      // A fixed γ: with γ auto a loaded machine may decode plainly, and the
      // draft's cache would then hold nothing to measure.
      R"( "speculation": {"gamma": 4}})";
  streaming.write_raw("POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                      "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
  streaming.read_until("data: ");  // its KV blocks are in use once text arrives
  for (const std::string& model : reported_caches()) {
    const std::string series = std::string("tandem_kv_cache_usage_perc{model=\"") + model + "\"}";
    const double usage = server.metric(series);
    EXPECT_GT(usage, 0) << model;
    EXPECT_LE(usage, 1) << model;
  }
  streaming.read_until("data: [DONE]");
  for (const std::string& model : reported_caches()) {
    const std::string series = std::string("tandem_kv_cache_usage_perc{model=\"") + model + "\"}";
    EXPECT_TRUE(eventually([&] { return server.metric(series) == 0; })) << model;
  }
}

TEST(DashboardMetrics, WithoutADraftModelThereIsNoDraftKvUsage) {
  // Under mpirun the tiny target cannot be split over the ranks a job
  // without a draft rank gives it (and the draft's cache is never reported there).
  if (test_support::mpi_test_ranks() > 0) GTEST_SKIP() << "a local draft cache only";
  TinyDeployment deployment;
  deployment.draft = false;
  TestServer server(deployment);
  EXPECT_EQ(server.metric("tandem_kv_cache_usage_perc{model=\"target\"}"), 0);
  EXPECT_EQ(server.metric("tandem_kv_cache_usage_perc{model=\"draft\"}"), -1);
}

}  // namespace
}  // namespace tandem
