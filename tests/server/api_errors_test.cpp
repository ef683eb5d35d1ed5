// Every error the API promises, over real HTTP: status, OpenAI-shaped JSON
// body, the field named in `param`; and the server still serves afterwards.
#include <gtest/gtest.h>

#include <cstdlib>

#include "tests/server/test_server.h"

namespace tandem {
namespace {

using nlohmann::json;
using test_support::HttpClient;
using test_support::HttpReply;
using test_support::TestServer;
using test_support::TinyDeployment;

// The error object of a reply, checked for OpenAI's shape.
json error_of(const HttpReply& reply) {
  const json body = json::parse(reply.body);
  EXPECT_TRUE(body.contains("error")) << reply.body;
  const json& error = body["error"];
  EXPECT_TRUE(error["message"].is_string());
  EXPECT_TRUE(error["type"].is_string());
  EXPECT_TRUE(error.contains("param"));
  EXPECT_TRUE(error.contains("code"));
  return error;
}

struct BadRequest {
  std::string body;
  std::string param;  // "" = null
};

TEST(ApiErrors, BadRequestsGet400NamingTheField) {
  TestServer server;
  const std::string long_prompt(4000, 'a');  // far more than 256 tokens
  const std::vector<BadRequest> cases = {
      {R"({"prompt": "hi", "max_tokens": 4)", ""},  // malformed JSON
      {R"([1, 2, 3])", ""},                          // not an object
      {R"({"max_tokens": 4})", "prompt"},
      {R"({"prompt": 17})", "prompt"},
      {R"({"prompt": ""})", "prompt"},
      {R"({"prompt": [1, 99999]})", "prompt"},
      {R"({"prompt": "hi", "max_tokens": "four"})", "max_tokens"},
      {R"({"prompt": "hi", "max_tokens": 0})", "max_tokens"},
      {R"({"prompt": "hi", "max_tokens": 2.5})", "max_tokens"},
      {R"({"prompt": "hi", "temperature": -1})", "temperature"},
      {R"({"prompt": "hi", "temperature": "hot"})", "temperature"},
      {R"({"prompt": "hi", "top_p": 0})", "top_p"},
      {R"({"prompt": "hi", "top_k": -5})", "top_k"},
      {R"({"prompt": "hi", "seed": "x"})", "seed"},
      {R"({"prompt": "hi", "stop": 5})", "stop"},
      {R"({"prompt": "hi", "stream": "yes"})", "stream"},
      {R"({"prompt": "hi", "n": 17})", "n"},
      {R"({"prompt": "hi", "n": 0})", "n"},
      {R"({"prompt": "hi", "n": 2, "best_of": 1})", "best_of"},
      {R"({"prompt": "hi", "best_of": 3, "stream": true})", "best_of"},
      {R"({"prompt": []})", "prompt"},
      {R"({"prompt": ["hi", ""]})", "prompt"},
      {R"({"prompt": ["hi", [1, 99999]]})", "prompt"},
      {R"({"prompt": "hi", "best_of": 17})", "best_of"},
      {R"({"prompt": "hi", "echo": "yes"})", "echo"},
      {R"({"prompt": "hi", "logprobs": 21})", "logprobs"},
      {R"({"prompt": "hi", "max_tokens": 0, "echo": false})", "max_tokens"},
      {R"({"prompt": "hi", "frobnicate": 1})", "frobnicate"},
      {R"({"prompt": "hi", "speculation": {"gamma": 100}})", "speculation.gamma"},
      {R"({"prompt": "hi", "speculation": {"drafter": "oracle"}})", "speculation.drafter"},
      {R"({"prompt": ")" + long_prompt + R"("})", "prompt"},
      {R"({"prompt": "hi there", "max_tokens": 255})", "max_tokens"},  // prompt + 255 > 256
  };
  HttpClient http(server.port());  // one keep-alive connection through all of them
  for (const BadRequest& bad : cases) {
    const HttpReply reply = http.post_json("/v1/completions", bad.body);
    ASSERT_EQ(reply.status, 400) << bad.body.substr(0, 80) << " -> " << reply.body;
    const json error = error_of(reply);
    EXPECT_EQ(error["type"], "invalid_request_error");
    if (bad.param.empty()) {
      EXPECT_TRUE(error["param"].is_null()) << reply.body;
    } else {
      EXPECT_EQ(error["param"], bad.param) << bad.body.substr(0, 80) << " -> " << reply.body;
    }
  }
  // Nothing above reached the engine or broke the server.
  EXPECT_EQ(server.metric("tandem_prompt_tokens_total"), 0);
  EXPECT_EQ(http.post_json("/v1/completions", R"({"prompt": "hi", "max_tokens": 2})").status, 200);
}

TEST(ApiErrors, OversizedBodyGets413) {
  TinyDeployment deployment;
  deployment.server = "  max_body_bytes: 4096\n";
  TestServer server(deployment);
  HttpClient http(server.port());
  const HttpReply reply =
      http.post_json("/v1/completions", R"({"prompt": ")" + std::string(10000, 'a') + R"("})");
  EXPECT_EQ(reply.status, 413);
  EXPECT_NE(error_of(reply)["message"].get<std::string>().find("max_body_bytes"), std::string::npos);
}

TEST(ApiErrors, UnknownRoute404WrongMethod405) {
  TestServer server;
  HttpClient http(server.port());
  const HttpReply missing = http.send("GET", "/v1/chat/nothing");
  EXPECT_EQ(missing.status, 404);
  error_of(missing);
  const HttpReply wrong = http.send("GET", "/v1/completions");
  EXPECT_EQ(wrong.status, 405);
  EXPECT_EQ(wrong.header("allow"), "POST, OPTIONS");
  error_of(wrong);
  EXPECT_EQ(http.send("DELETE", "/metrics").status, 405);
}

TEST(ApiErrors, MalformedHttpGets400AndTheServerGoesOn) {
  TestServer server;
  {
    HttpClient http(server.port());
    http.write_raw("THIS IS NOT HTTP\r\n\r\n");
    const std::string raw = http.read_until("\r\n\r\n");
    EXPECT_NE(raw.find("400"), std::string::npos) << raw;
  }
  {
    HttpClient http(server.port());
    http.write_raw("POST /v1/completions HTTP/1.1\r\nContent-Length: nope\r\n\r\n");
    EXPECT_NE(http.read_until("\r\n\r\n").find("400"), std::string::npos);
  }
  HttpClient http(server.port());
  EXPECT_EQ(http.send("GET", "/health").status, 200);
}

TEST(ApiErrors, FullQueueGets429WithRetryAfter) {
  TinyDeployment deployment;
  deployment.scheduler = "  max_queued_requests: 0\n";
  TestServer server(deployment);
  HttpClient http(server.port());
  const HttpReply reply = http.post_json("/v1/completions", R"({"prompt": "hi"})");
  EXPECT_EQ(reply.status, 429);
  EXPECT_EQ(reply.header("retry-after"), "1");
  EXPECT_EQ(error_of(reply)["type"], "rate_limit_error");
}

TEST(ApiErrors, ApiKeyRequiredWhenConfigured) {
  ::setenv("TANDEM_TEST_API_KEY", "sekret-123", 1);
  TinyDeployment deployment;
  deployment.server = "  api_key_env: TANDEM_TEST_API_KEY\n";
  TestServer server(deployment);
  HttpClient http(server.port());
  const std::string body = R"({"prompt": "hi", "max_tokens": 2})";
  EXPECT_EQ(http.post_json("/v1/completions", body).status, 401);
  const HttpReply wrong = http.post_json("/v1/completions", body, {{"Authorization", "Bearer sekret-12"}});
  EXPECT_EQ(wrong.status, 401);
  EXPECT_EQ(error_of(wrong)["code"], "invalid_api_key");
  EXPECT_EQ(http.post_json("/v1/completions", body, {{"Authorization", "Bearer sekret-123"}}).status, 200);
  EXPECT_EQ(http.send("GET", "/v1/models").status, 401);
  EXPECT_EQ(http.send("GET", "/health").status, 200);  // probes need no key
}

TEST(ApiErrors, RequestPastItsDeadlineGets504) {
  TinyDeployment deployment;
  deployment.server = "  request_timeout_seconds: 0.01\n";
  TestServer server(deployment);
  HttpClient http(server.port());
  // 250 tokens take far longer than 10 ms on this machine.
  const HttpReply reply =
      http.post_json("/v1/completions", R"({"prompt": "The", "max_tokens": 250, "temperature": 0, "ignore_eos": true})");
  EXPECT_EQ(reply.status, 504);
  error_of(reply);
  EXPECT_EQ(server.metric("tandem_request_success_total{finished_reason=\"timeout\"}"), 1);
}

}  // namespace
}  // namespace tandem
