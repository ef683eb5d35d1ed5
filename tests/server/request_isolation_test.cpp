// One request's fault is that request's alone, end to end: a top_p that
// is 0 as the engine's float is a 400 naming top_p while the requests in
// flight beside it finish with exactly the text they have alone; and a
// request that the KV cache can never hold, even alone, is a 400 naming
// max_tokens and scheduler.kv_blocks (never a 200 cut short with
// finish_reason "length"), while requests that fit are served.
#include <gtest/gtest.h>

#include <future>
#include <string>
#include <vector>

#include "tests/server/test_server.h"

namespace tandem {
namespace {

using json = nlohmann::json;
using test_support::HttpClient;
using test_support::TestServer;
using test_support::TinyDeployment;

json error_object(const test_support::HttpReply& reply) { return json::parse(reply.body)["error"]; }

TEST(RequestIsolation, ATopPThatIsZeroAsAFloatIsRefusedWhileOthersInFlightSucceed) {
  TinyDeployment deployment;
  deployment.batch_invariant = true;
  TestServer server(deployment);
  std::vector<json> bodies;
  for (const char* prompt : {"The old man", "Once upon a time", "hi", "The city"})
    bodies.push_back({{"prompt", prompt}, {"max_tokens", 48}, {"temperature", 0}, {"ignore_eos", true}});
  bodies[1]["temperature"] = 0.8;  // seeded sampling too, at a fixed γ so that it replays
  bodies[1]["seed"] = 11;
  for (json& body : bodies) body["speculation"] = {{"gamma", 3}};
  std::vector<std::string> alone;
  for (const json& body : bodies) alone.push_back(server.complete(body)["choices"][0]["text"]);

  std::vector<std::future<std::string>> in_flight;
  for (const json& body : bodies)
    in_flight.push_back(std::async(std::launch::async, [&server, body] {
      return server.complete(body)["choices"][0]["text"].get<std::string>();
    }));
  HttpClient http(server.port());
  for (const char* field : {"top_p", "temperature"}) {
    json bad = {{"prompt", "hi"}, {field, 1e-300}};
    const test_support::HttpReply reply = http.post_json("/v1/completions", bad.dump());
    ASSERT_EQ(reply.status, 400) << reply.body;
    EXPECT_EQ(error_object(reply)["param"], field) << reply.body;
    EXPECT_NE(error_object(reply)["message"].get<std::string>().find("32-bit float"), std::string::npos)
        << reply.body;
    // The chat route reads the field the same way.
    json chat = {{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {field, 1e-300}};
    const test_support::HttpReply chat_reply = http.post_json("/v1/chat/completions", chat.dump());
    ASSERT_EQ(chat_reply.status, 400) << chat_reply.body;
    EXPECT_EQ(error_object(chat_reply)["param"], field) << chat_reply.body;
  }
  for (size_t i = 0; i < bodies.size(); ++i)
    EXPECT_EQ(in_flight[i].get(), alone[i]) << "request " << i << ": " << bodies[i].dump();
}

TEST(RequestIsolation, ARequestTheKvCacheCanNeverHoldIsRefusedAtAdmission) {
  // One block of 16 positions: a request holds its prompt and output but
  // the last token in it.
  TinyDeployment deployment;
  deployment.scheduler = "  kv_blocks: 1\n";
  TestServer server(deployment);
  HttpClient http(server.port());
  const json small = server.complete({{"prompt", "hi"}, {"max_tokens", 4}, {"ignore_eos", true}});
  EXPECT_EQ(small["usage"]["completion_tokens"], 4);
  const int prompt_tokens = small["usage"]["prompt_tokens"];
  const int most = 16 + 1 - prompt_tokens;  // the longest output that fits

  const json fits = server.complete({{"prompt", "hi"}, {"max_tokens", most}, {"ignore_eos", true}});
  EXPECT_EQ(fits["usage"]["completion_tokens"], most);
  EXPECT_EQ(fits["choices"][0]["finish_reason"], "length");

  for (int max_tokens : {most + 1, 40}) {
    const test_support::HttpReply reply = http.post_json(
        "/v1/completions", json({{"prompt", "hi"}, {"max_tokens", max_tokens}}).dump());
    ASSERT_EQ(reply.status, 400) << reply.body;
    const json error = error_object(reply);
    EXPECT_EQ(error["param"], "max_tokens");
    const std::string message = error["message"];
    EXPECT_NE(message.find("holds 16"), std::string::npos) << message;
    EXPECT_NE(message.find("at most " + std::to_string(most) + " tokens"), std::string::npos)
        << message;
    EXPECT_NE(message.find("scheduler.kv_blocks"), std::string::npos) << message;
  }
  // Streamed: refused before the stream starts.
  const test_support::HttpReply streamed = http.post_json(
      "/v1/completions", json({{"prompt", "hi"}, {"max_tokens", 40}, {"stream", true}}).dump());
  EXPECT_EQ(streamed.status, 400) << streamed.body;
  // Chat: the same check, naming the field the client used.
  const test_support::HttpReply chat = http.post_json(
      "/v1/chat/completions",
      json({{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"max_completion_tokens", 40}})
          .dump());
  ASSERT_EQ(chat.status, 400) << chat.body;
  EXPECT_TRUE(error_object(chat)["param"] == "max_completion_tokens" ||
              error_object(chat)["param"] == "messages")
      << chat.body;
  EXPECT_NE(error_object(chat)["message"].get<std::string>().find("scheduler.kv_blocks"),
            std::string::npos)
      << chat.body;
}

}  // namespace
}  // namespace tandem
