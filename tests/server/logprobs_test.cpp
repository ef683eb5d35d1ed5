// logprobs, top_logprobs and echo end to end on the tiny pair, both routes,
// whole and streamed. Greedy requests, so that the chosen token is each
// step's most likely one and a streamed request gives the same tokens as a
// whole one.
#include <gtest/gtest.h>

#include <algorithm>

#include "tests/server/test_server.h"

namespace tandem {
namespace {

using nlohmann::json;
using test_support::HttpClient;
using test_support::sse_payloads;
using test_support::TestServer;

const std::string kPrompt = "The history of the city";

json completion_body(json extra) {
  json body = {{"prompt", kPrompt}, {"max_tokens", 10}, {"temperature", 0}, {"ignore_eos", true}};
  if (!extra.is_null()) body.update(extra);  // {} arrives as null
  return body;
}

json chat_body(json extra) {
  json body = {{"messages", json::array({{{"role", "user"}, {"content", "Tell me about the city"}}})},
               {"max_tokens", 10}, {"temperature", 0}, {"ignore_eos", true}};
  if (!extra.is_null()) body.update(extra);  // {} arrives as null
  return body;
}

// The data payloads of a streamed request, [DONE] left out.
std::vector<json> stream_chunks(const TestServer& server, const std::string& path, json body) {
  body["stream"] = true;
  HttpClient http(server.port());
  const test_support::HttpReply reply = http.post_json(path, body.dump());
  EXPECT_EQ(reply.status, 200) << reply.body;
  std::vector<json> chunks;
  for (const std::string& payload : sse_payloads(reply.body)) {
    if (payload != "[DONE]") chunks.push_back(json::parse(payload));
  }
  return chunks;
}

// The most likely alternative of a completions top_logprobs object.
std::string likeliest(const json& top) {
  std::string best;
  double best_logprob = -1e300;
  for (const auto& [token, logprob] : top.items()) {
    if (logprob.get<double>() > best_logprob) {
      best = token;
      best_logprob = logprob.get<double>();
    }
  }
  return best;
}

TEST(Logprobs, CompletionHasOneEntryPerTokenWithItsTopAlternatives) {
  TestServer server;
  const json reply = server.complete(completion_body({{"logprobs", 3}}));
  const json& choice = reply["choices"][0];
  const json& logprobs = choice["logprobs"];
  const size_t tokens = reply["usage"]["completion_tokens"].get<size_t>();
  ASSERT_EQ(tokens, 10u);
  ASSERT_EQ(logprobs["tokens"].size(), tokens);
  ASSERT_EQ(logprobs["token_logprobs"].size(), tokens);
  ASSERT_EQ(logprobs["top_logprobs"].size(), tokens);
  ASSERT_EQ(logprobs["text_offset"].size(), tokens);
  std::string spelled;
  for (size_t i = 0; i < tokens; ++i) {
    const double logprob = logprobs["token_logprobs"][i].get<double>();
    EXPECT_LE(logprob, 0.0);
    const json& top = logprobs["top_logprobs"][i];
    EXPECT_EQ(top.size(), 3u);
    // Greedy: the token taken is the likeliest, and its logprob is the top one.
    EXPECT_EQ(likeliest(top), logprobs["tokens"][i].get<std::string>());
    EXPECT_DOUBLE_EQ(top[logprobs["tokens"][i].get<std::string>()].get<double>(), logprob);
    EXPECT_EQ(logprobs["text_offset"][i].get<size_t>(), spelled.size());
    // A special token (ignore_eos lets end-of-sequence come mid-output) has
    // its own string, but no text in the output (docs/serving.md).
    const std::string token = logprobs["tokens"][i].get<std::string>();
    const bool special = token.size() > 4 && token.starts_with("<|") && token.ends_with("|>");
    if (!special) spelled += token;
  }
  if (spelled.find("\\x") == std::string::npos) {
    EXPECT_EQ(spelled, choice["text"].get<std::string>());
  }
}

TEST(Logprobs, ZeroAlternativesGivesEmptyTopObjects) {
  TestServer server;
  const json logprobs = server.complete(completion_body({{"logprobs", 0}}))["choices"][0]["logprobs"];
  ASSERT_EQ(logprobs["top_logprobs"].size(), 10u);
  for (const json& top : logprobs["top_logprobs"]) EXPECT_TRUE(top.is_object() && top.empty());
}

TEST(Logprobs, WithoutTheFieldLogprobsAreNull) {
  TestServer server;
  EXPECT_TRUE(server.complete(completion_body({}))["choices"][0]["logprobs"].is_null());
  EXPECT_TRUE(server.chat(chat_body({}))["choices"][0]["logprobs"].is_null());
}

TEST(Logprobs, EchoReturnsThePromptAndItsLogprobsFirst) {
  TestServer server;
  const json reply = server.complete(completion_body({{"logprobs", 1}, {"echo", true}, {"max_tokens", 4}}));
  const json& choice = reply["choices"][0];
  const std::string text = choice["text"];
  ASSERT_TRUE(text.starts_with(kPrompt)) << text;
  const size_t prompt_tokens = reply["usage"]["prompt_tokens"].get<size_t>();
  const json& logprobs = choice["logprobs"];
  ASSERT_EQ(logprobs["tokens"].size(), prompt_tokens + reply["usage"]["completion_tokens"].get<size_t>());
  EXPECT_TRUE(logprobs["token_logprobs"][0].is_null());
  EXPECT_TRUE(logprobs["top_logprobs"][0].is_null());
  for (size_t i = 1; i < logprobs["tokens"].size(); ++i) {
    EXPECT_LE(logprobs["token_logprobs"][i].get<double>(), 0.0) << i;
    EXPECT_EQ(logprobs["top_logprobs"][i].size(), 1u) << i;
  }
  EXPECT_EQ(logprobs["text_offset"][prompt_tokens].get<size_t>(), kPrompt.size());
  // The completion's part is what the same request without echo returns.
  const json plain = server.complete(completion_body({{"logprobs", 1}, {"max_tokens", 4}}));
  EXPECT_EQ(text, kPrompt + plain["choices"][0]["text"].get<std::string>());
}

TEST(Logprobs, EchoWithoutLogprobsReturnsThePromptText) {
  TestServer server;
  const json reply = server.complete(completion_body({{"echo", true}, {"max_tokens", 3}}));
  const json plain = server.complete(completion_body({{"max_tokens", 3}}));
  EXPECT_EQ(reply["choices"][0]["text"], kPrompt + plain["choices"][0]["text"].get<std::string>());
  EXPECT_TRUE(reply["choices"][0]["logprobs"].is_null());
}

TEST(Logprobs, MaxTokensZeroWithEchoScoresThePromptAlone) {
  TestServer server;
  const json reply = server.complete(completion_body({{"logprobs", 1}, {"echo", true}, {"max_tokens", 0}}));
  const json& choice = reply["choices"][0];
  EXPECT_EQ(choice["text"], kPrompt);
  EXPECT_EQ(reply["usage"]["completion_tokens"], 0);
  EXPECT_EQ(choice["finish_reason"], "length");
  const size_t prompt_tokens = reply["usage"]["prompt_tokens"].get<size_t>();
  EXPECT_EQ(choice["logprobs"]["tokens"].size(), prompt_tokens);
  // The same scores as the prompt part of a request that goes on.
  const json longer = server.complete(completion_body({{"logprobs", 1}, {"echo", true}, {"max_tokens", 2}}));
  for (size_t i = 1; i < prompt_tokens; ++i) {
    EXPECT_NEAR(choice["logprobs"]["token_logprobs"][i].get<double>(),
                longer["choices"][0]["logprobs"]["token_logprobs"][i].get<double>(), 1e-4) << i;
  }
  const json bare = server.complete(completion_body({{"echo", true}, {"max_tokens", 0}}));
  EXPECT_EQ(bare["choices"][0]["text"], kPrompt);
  EXPECT_TRUE(bare["choices"][0]["logprobs"].is_null());
}

TEST(Logprobs, StreamedCompletionChunksAddUpToTheWholeResponse) {
  TestServer server;
  for (const json& extra : {json{{"logprobs", 2}}, json{{"logprobs", 2}, {"echo", true}},
                            json{{"logprobs", 2}, {"stop", "."}, {"max_tokens", 30}}}) {
    const json whole = server.complete(completion_body(extra))["choices"][0];
    std::string text;
    json merged = {{"tokens", json::array()}, {"token_logprobs", json::array()},
                   {"top_logprobs", json::array()}, {"text_offset", json::array()}};
    for (const json& chunk : stream_chunks(server, "/v1/completions", completion_body(extra))) {
      const json& choice = chunk["choices"][0];
      text += choice["text"].get<std::string>();
      if (choice["logprobs"].is_null()) continue;
      for (const auto& [key, list] : merged.items()) {
        for (const json& item : choice["logprobs"][key]) list.push_back(item);
      }
    }
    EXPECT_EQ(text, whole["text"].get<std::string>()) << extra;
    EXPECT_EQ(merged, whole["logprobs"]) << extra;
  }
}

TEST(Logprobs, ChatLogprobsCarryTokensBytesAndTopLogprobs) {
  TestServer server;
  const json reply = server.chat(chat_body({{"logprobs", true}, {"top_logprobs", 2}}));
  const json& logprobs = reply["choices"][0]["logprobs"];
  EXPECT_TRUE(logprobs["refusal"].is_null());
  const json& content = logprobs["content"];
  ASSERT_EQ(content.size(), reply["usage"]["completion_tokens"].get<size_t>());
  for (const json& entry : content) {
    EXPECT_LE(entry["logprob"].get<double>(), 0.0);
    ASSERT_EQ(entry["top_logprobs"].size(), 2u);
    EXPECT_EQ(entry["top_logprobs"][0]["token"], entry["token"]);  // greedy: the likeliest
    EXPECT_DOUBLE_EQ(entry["top_logprobs"][0]["logprob"].get<double>(), entry["logprob"].get<double>());
    const std::string token = entry["token"];
    if (token.find("\\x") == std::string::npos) {
      std::vector<int> bytes(token.begin(), token.end());
      for (int& byte : bytes) byte &= 0xFF;
      EXPECT_EQ(entry["bytes"], json(bytes));
    }
  }
  const json bare = server.chat(chat_body({{"logprobs", true}}));
  for (const json& entry : bare["choices"][0]["logprobs"]["content"]) EXPECT_TRUE(entry["top_logprobs"].empty());
}

TEST(Logprobs, StreamedChatChunksAddUpToTheWholeResponse) {
  TestServer server;
  const json body = chat_body({{"logprobs", true}, {"top_logprobs", 1}});
  const json whole = server.chat(body)["choices"][0];
  std::string text;
  json content = json::array();
  for (const json& chunk : stream_chunks(server, "/v1/chat/completions", body)) {
    const json& choice = chunk["choices"][0];
    if (choice["delta"].contains("content")) text += choice["delta"]["content"].get<std::string>();
    ASSERT_TRUE(choice["logprobs"].is_object()) << chunk;
    for (const json& entry : choice["logprobs"]["content"]) content.push_back(entry);
  }
  EXPECT_EQ(text, whole["message"]["content"].get<std::string>());
  EXPECT_EQ(content, whole["logprobs"]["content"]);
}

TEST(Logprobs, BadFieldsAre400sNamingThem) {
  TestServer server;
  struct Bad {
    std::string path;
    json body;
    std::string param;
  };
  const std::vector<Bad> cases = {
      {"/v1/completions", completion_body({{"logprobs", 21}}), "logprobs"},
      {"/v1/completions", completion_body({{"logprobs", true}}), "logprobs"},
      {"/v1/completions", completion_body({{"echo", 1}}), "echo"},
      {"/v1/completions", completion_body({{"max_tokens", 0}}), "max_tokens"},
      {"/v1/chat/completions", chat_body({{"top_logprobs", 2}}), "top_logprobs"},
      {"/v1/chat/completions", chat_body({{"logprobs", true}, {"top_logprobs", 21}}), "top_logprobs"},
      {"/v1/chat/completions", chat_body({{"logprobs", 1}}), "logprobs"},
      {"/v1/chat/completions", chat_body({{"max_tokens", 0}}), "max_tokens"},
      {"/v1/chat/completions", chat_body({{"echo", true}}), "echo"},
  };
  HttpClient http(server.port());
  for (const Bad& bad : cases) {
    const test_support::HttpReply reply = http.post_json(bad.path, bad.body.dump());
    ASSERT_EQ(reply.status, 400) << bad.body << " -> " << reply.body;
    EXPECT_EQ(json::parse(reply.body)["error"]["param"], bad.param) << bad.body;
  }
}

}  // namespace
}  // namespace tandem
