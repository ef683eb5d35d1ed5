// Tests of tools/soak/soak_run.h against FakeServer (tests/support/fake_http_server.h) on
// loopback: the soak sees what a misbehaving server does and its verdict
// fails for it. (The soak against the real server: run_soak.sh.)
#include "tools/soak/soak_run.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/support/fake_http_server.h"
#include "tools/soak/soak_verdict.h"

namespace tandem::soak {
namespace {

using test_support::FakeAnswer;
using test_support::FakeServer;

SoakOptions short_soak(int port) {
  SoakOptions options;
  options.endpoint.host = "127.0.0.1";
  options.endpoint.port = port;
  options.duration_seconds = 2;
  options.warmup_seconds = 0.5;
  options.clients = 2;
  options.weights = default_weights();
  options.burst_every_seconds = 0.5;
  options.burst_size = 3;
  options.client_timeout_seconds = 5;
  options.health_every_seconds = 0.2;
  options.drain_seconds = 1;
  options.mix.prompts = {"hello there"};
  return options;
}

// Whether `text` is a completion or chat body the real server would take:
// the fields the soak's good requests use, each with a sane value.
bool valid_body(const std::string& text) {
  const nlohmann::json body = nlohmann::json::parse(text, nullptr, false);
  if (!body.is_object()) return false;
  const bool prompt = body.contains("prompt") && body["prompt"].is_string();
  const bool messages = body.contains("messages") && body["messages"].is_array() &&
                        !body["messages"].empty() && body["messages"][0].value("role", "") == "user";
  if (prompt == messages) return false;
  for (const auto& [key, value] : body.items()) {
    if (key == "max_tokens" && !(value.is_number_integer() && value.get<int>() >= 1 && value.get<int>() <= 4096))
      return false;
    if (key == "temperature" && !value.is_number()) return false;
    // Not 0, but 0 as the engine's float: the real server refuses it.
    if (key == "temperature" && value.get<double>() != 0 && static_cast<float>(value.get<double>()) == 0)
      return false;
    if (key == "top_p" || key == "no_such_field") return false;
  }
  return true;
}

// A server that answers every route as documented would, but every valid
// completion and chat with `status`, and /metrics with `running` requests.
FakeServer::Handler server_answering(int status, int running, std::chrono::milliseconds health_delay = {}) {
  return [=](const std::string& method, const std::string& path, const std::string& body) -> FakeAnswer {
    if (path == "/health") return {200, R"({"status":"ok"})", "application/json", health_delay};
    if (path == "/metrics") return {200, test_support::fake_metrics(running), "text/plain"};
    const bool route = path == "/v1/completions" || path == "/v1/chat/completions";
    if (!route) return {404, R"({"error":{"message":"no such route"}})"};
    if (method != "POST") return {405, R"({"error":{"message":"wrong method"}})"};
    if (!valid_body(body)) return {400, R"({"error":{"message":"bad request"}})"};
    return {status, R"({"error":{"message":"engine step failed"}})"};
  };
}

TEST(RunSoak, CountsA500ForEveryGoodRequestAsUnexpected) {
  FakeServer server(server_answering(500, 0));
  const SoakResult result = run_soak(short_soak(server.port()), nullptr);
  const KindTally& completions = result.kinds[static_cast<size_t>(Kind::completion)];
  EXPECT_GT(completions.sent, 0u);
  EXPECT_EQ(completions.unexpected_5xx, completions.statuses.at(500));
  EXPECT_GT(result.unexpected_total, 0u);
  ASSERT_FALSE(result.unexpected.empty());
  EXPECT_NE(result.unexpected[0].why.find("engine step failed"), std::string::npos);
  EXPECT_GT(result.kinds[static_cast<size_t>(Kind::burst)].sent, 0u);
  const Verdict verdict = judge(result, {0.5, 5, 2});
  EXPECT_FALSE(verdict.pass);
}

TEST(RunSoak, SeesRequestsLeftRunningAfterTheTraffic) {
  FakeServer server(server_answering(429, 1));
  const SoakResult result = run_soak(short_soak(server.port()), nullptr);
  EXPECT_FALSE(result.drain.idle);
  EXPECT_EQ(result.drain.last.at("tandem_num_requests_running"), 1);
  EXPECT_GE(result.drain.seconds, 1.0);  // it waited the drain time before giving up
  EXPECT_EQ(result.unexpected_total, 0u);  // 429s are the documented overload answer
}

TEST(RunSoak, MeasuresASlowHealth) {
  FakeServer server(server_answering(429, 0, std::chrono::milliseconds(300)));
  const SoakResult result = run_soak(short_soak(server.port()), nullptr);
  EXPECT_TRUE(result.drain.idle);
  ASSERT_FALSE(result.health.empty());
  for (const HealthProbe& probe : result.health) {
    EXPECT_EQ(probe.status, 200);
    EXPECT_GE(probe.seconds, 0.3);
  }
  SoakLimits strict;
  strict.warmup_seconds = 0.5;
  strict.health_seconds = 0.25;
  EXPECT_EQ(judge(result, strict).health_failures, result.health.size());
}

}  // namespace
}  // namespace tandem::soak
