// Sessions that end early or cannot all fit: a client that hangs up frees its
// KV blocks at once; a KV cache too small for every session preempts and
// recomputes without changing any output; shutdown refuses new work and ends
// open streams cleanly; /metrics passes promtool.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <future>
#include <thread>

#include "tests/server/test_server.h"
#include "tests/support/eventually.h"

namespace tandem {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using test_support::eventually;
using test_support::HttpClient;
using test_support::sse_payloads;
using test_support::TestServer;
using test_support::TinyDeployment;

TEST(Lifecycle, ClientThatHangsUpMidStreamFreesItsKvBlocks) {
  TestServer server;
  const double free_at_rest = server.metric("tandem_kv_cache_blocks_free{model=\"target\"}");
  {
    HttpClient http(server.port());
    const std::string body =
        R"({"prompt": "The history of the city", "max_tokens": 220, "temperature": 0.9, "seed": 3, "stream": true, "ignore_eos": true})";
    http.write_raw("POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                   "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
    http.read_until("data: ");  // the first chunk has arrived: the session is running
    EXPECT_GT(server.metric("tandem_kv_cache_blocks_used{model=\"target\"}"), 0);
    http.close();
  }
  EXPECT_TRUE(eventually([&] {
    return server.metric("tandem_request_success_total{finished_reason=\"cancelled\"}") == 1;
  }));
  // Gauges follow the engine thread's next loop: poll.
  EXPECT_TRUE(eventually([&] {
    return server.metric("tandem_kv_cache_blocks_used{model=\"target\"}") == 0 &&
           server.metric("tandem_kv_cache_blocks_used{model=\"draft\"}") == 0;
  }));
  EXPECT_EQ(server.metric("tandem_kv_cache_blocks_free{model=\"target\"}"), free_at_rest);
  EXPECT_LT(server.metric("tandem_generation_tokens_total"), 220);
}

TEST(Lifecycle, NonStreamingClientThatHangsUpIsCancelledToo) {
  TestServer server;
  {
    HttpClient http(server.port());
    const std::string body = R"({"prompt": "The", "max_tokens": 250, "temperature": 0, "ignore_eos": true})";
    http.write_raw("POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                   "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
    std::this_thread::sleep_for(30ms);
    http.close();
  }
  EXPECT_TRUE(eventually([&] {
    return server.metric("tandem_request_success_total{finished_reason=\"cancelled\"}") == 1;
  }));
  EXPECT_TRUE(eventually(
      [&] { return server.metric("tandem_kv_cache_blocks_used{model=\"target\"}") == 0; }));
}

TEST(Lifecycle, TinyKvCachePreemptsAndStillProducesTheSameOutputs) {
  std::vector<json> bodies;
  for (int i = 0; i < 8; ++i) {
    bodies.push_back({{"prompt", i % 2 ? "In the morning, the" : "The government of"},
                      {"max_tokens", 90 + 10 * i}, {"seed", 50 + i}, {"ignore_eos", true},
                      {"temperature", i % 3 == 0 ? 0.0 : 0.8},
                      {"speculation", {{"gamma", 1 + i % 4}}}});
  }
  // A resumed session recomputes its prefix as one prefill of up to ~250
  // rows: on CUDA only the batch-invariant matmul rounds it as decoding did.
  TinyDeployment roomy_deployment;
  roomy_deployment.batch_invariant = true;
  std::vector<std::string> expected;
  {
    TestServer roomy(roomy_deployment);
    for (const json& body : bodies) expected.push_back(roomy.complete(body)["choices"][0]["text"]);
  }
  // 24 blocks of 16 tokens hold 384 tokens: two or three of these sessions.
  TinyDeployment deployment = roomy_deployment;
  deployment.scheduler = "  kv_blocks: 24\n  draft_kv_blocks: 24\n";
  TestServer tight(deployment);
  std::vector<std::future<std::string>> outputs;
  for (const json& body : bodies)
    outputs.push_back(std::async(std::launch::async, [&tight, body] {
      return tight.complete(body)["choices"][0]["text"].get<std::string>();
    }));
  for (size_t i = 0; i < bodies.size(); ++i) EXPECT_EQ(outputs[i].get(), expected[i]) << i;
  EXPECT_GT(tight.metric("tandem_num_preemptions_total"), 0);
  EXPECT_TRUE(eventually(
      [&] { return tight.metric("tandem_kv_cache_blocks_used{model=\"target\"}") == 0; }));
}

TEST(Lifecycle, ShutdownRefusesNewWorkAndEndsOpenStreamsCleanly) {
  TinyDeployment deployment;
  deployment.server = "  shutdown_grace_seconds: 0.05\n";
  auto server = std::make_unique<TestServer>(deployment);
  HttpClient idle(server->port());
  ASSERT_EQ(idle.send("GET", "/health").status, 200);  // a keep-alive connection

  HttpClient streaming(server->port());
  const std::string body =
      R"({"prompt": "The", "max_tokens": 250, "temperature": 0.7, "seed": 1, "stream": true, "ignore_eos": true})";
  streaming.write_raw("POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                      "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
  streaming.read_until("data: ");

  std::thread stopper([&] { server->shutdown(); });
  std::this_thread::sleep_for(20ms);  // inside the grace period: draining
  const auto refused = idle.post_json("/v1/completions", R"({"prompt": "hi"})");
  EXPECT_EQ(refused.status, 503);
  const std::string rest = streaming.read_until("data: [DONE]");
  EXPECT_NE(rest.find("shutting down"), std::string::npos);
  stopper.join();
  server.reset();
}

TEST(Lifecycle, MetricsPassPromtool) {
  TestServer server;
  server.complete({{"prompt", "The history"}, {"max_tokens", 16}, {"temperature", 0.5}, {"seed", 1}});
  HttpClient http(server.port());
  http.send("GET", "/nowhere");
  const auto reply = http.send("GET", "/metrics");
  ASSERT_EQ(reply.status, 200);
  EXPECT_EQ(reply.header("content-type"), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_NE(reply.body.find("tandem_spec_decode_num_draft_tokens_total"), std::string::npos);
  EXPECT_NE(reply.body.find("tandem_requests_total{route=\"other\",status=\"404\"} 1"), std::string::npos);

  const std::string path = ::testing::TempDir() + "/tandem_metrics_" + std::to_string(::getpid()) + ".txt";
  std::ofstream(path) << reply.body;
  const std::string command = "promtool check metrics < " + path + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char line[512];
  while (fgets(line, sizeof line, pipe)) output += line;
  const int status = pclose(pipe);
  EXPECT_EQ(status, 0) << "promtool (Debian package prometheus) says: " << output;
  EXPECT_EQ(output, "");
}

}  // namespace
}  // namespace tandem
