// /v1/completions end to end on the tiny pair: response shapes, streaming,
// stop strings, speculation overrides, and the two promises of the design:
// greedy output equals plain target decoding, and batching many concurrent
// sessions changes no output.
#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "coordinator/models/load_model.h"
#include "kernels/backend.h"
#include "tests/server/test_server.h"
#include "workers/plain_decoder.h"

namespace tandem {
namespace {

using nlohmann::json;
using test_support::HttpClient;
using test_support::sse_payloads;
using test_support::TestServer;
using test_support::TinyDeployment;

const std::vector<std::string> kPrompts = {
    "The history of the city", "In the morning, the", "She said that", "The government of",
    "It was a long", "Scientists have found", "When the war ended", "The old man",
};

// Greedy continuation by plain decoding on the target alone, as text.
std::string plain_greedy(const std::string& prompt, int max_tokens) {
  auto backend = make_cpu_backend();
  ModelSpec spec;
  spec.path = std::string(TANDEM_SOURCE_DIR) + "/models/tiny/target";
  LoadedModel target = load_model(spec, *backend);
  DecodeRequest request;
  request.prompt = target.tokenizer->encode(prompt, true);
  request.max_new_tokens = max_tokens;
  request.sampling.temperature = 0;
  request.stop_ids = {*target.tokenizer->eos_id()};
  std::vector<int32_t> tokens;
  decode_plain(*target.model, *target.cache, request, [&](int32_t t) {
    tokens.push_back(t);
    return true;
  });
  return target.tokenizer->decode(tokens, /*skip_special=*/true);
}

TEST(Completions, ResponseHasOpenAiShapeUsageAndSpeculation) {
  TestServer server;
  const json reply = server.complete(
      {{"model", "tandem"}, {"prompt", "The history of the city"}, {"max_tokens", 12},
       {"temperature", 0}});
  EXPECT_EQ(reply["object"], "text_completion");
  EXPECT_EQ(reply["model"], "tandem");
  EXPECT_TRUE(reply["id"].get<std::string>().starts_with("cmpl-"));
  ASSERT_EQ(reply["choices"].size(), 1u);
  EXPECT_FALSE(reply["choices"][0]["text"].get<std::string>().empty());
  EXPECT_TRUE(reply["choices"][0]["finish_reason"] == "length" ||
              reply["choices"][0]["finish_reason"] == "stop");
  const json& usage = reply["usage"];
  EXPECT_GT(usage["prompt_tokens"].get<int>(), 0);
  EXPECT_LE(usage["completion_tokens"].get<int>(), 12);
  EXPECT_EQ(usage["total_tokens"], usage["prompt_tokens"].get<int>() + usage["completion_tokens"].get<int>());
  const json& speculation = reply["speculation"];
  EXPECT_EQ(speculation["lossless"], true);
  EXPECT_EQ(speculation["drafter"], "model");
  EXPECT_EQ(speculation["gamma_policy"], "auto");
  EXPECT_GE(speculation["target_steps"].get<int>(), 1);
  EXPECT_LE(speculation["accepted_tokens"].get<int>(), speculation["draft_tokens"].get<int>());
}

TEST(Completions, GreedyOutputEqualsPlainTargetDecodingForEveryDrafter) {
  TestServer server;
  for (const std::string& prompt : {kPrompts[0], kPrompts[4]}) {
    const std::string expected = plain_greedy(prompt, 40);
    for (const json& speculation :
         {json{{"drafter", "model"}, {"gamma", 4}}, json{{"drafter", "model"}, {"gamma", "auto"}},
          json{{"drafter", "ngram"}, {"gamma", 3}}, json{{"drafter", "none"}}}) {
      const json reply = server.complete({{"prompt", prompt}, {"max_tokens", 40},
                                          {"temperature", 0}, {"speculation", speculation}});
      EXPECT_EQ(reply["choices"][0]["text"], expected) << prompt << " with " << speculation.dump();
      EXPECT_EQ(reply["speculation"]["drafter"], speculation["drafter"]);
    }
  }
}

TEST(Completions, TokenIdPromptsAreAccepted) {
  TestServer server;
  const json by_text = server.complete({{"prompt", "The old man"}, {"max_tokens", 8}, {"temperature", 0}});
  auto backend = make_cpu_backend();
  const Tokenizer tokenizer = Tokenizer::load(std::string(TANDEM_SOURCE_DIR) + "/models/tiny/target");
  const std::vector<int32_t> ids = tokenizer.encode("The old man", true);
  const json by_ids = server.complete({{"prompt", ids}, {"max_tokens", 8}, {"temperature", 0}});
  EXPECT_EQ(by_ids["choices"][0]["text"], by_text["choices"][0]["text"]);
  EXPECT_EQ(by_ids["usage"]["prompt_tokens"], static_cast<int>(ids.size()));
}

TEST(Completions, StreamingChunksConcatenateToTheWholeResponse) {
  TestServer server;
  // A fixed γ: seeded sampled text then replays exactly (docs/serving.md).
  const json body = {{"prompt", "When the war ended"}, {"max_tokens", 30}, {"temperature", 0.8},
                     {"seed", 7}, {"speculation", {{"gamma", 4}}}};
  const json whole = server.complete(body);

  json streamed_body = body;
  streamed_body["stream"] = true;
  streamed_body["stream_options"] = {{"include_usage", true}};
  HttpClient http(server.port());
  const auto reply = http.post_json("/v1/completions", streamed_body.dump());
  ASSERT_EQ(reply.status, 200);
  EXPECT_EQ(reply.header("content-type"), "text/event-stream");
  const std::vector<std::string> payloads = sse_payloads(reply.body);
  ASSERT_GE(payloads.size(), 3u);
  EXPECT_EQ(payloads.back(), "[DONE]");
  std::string text;
  std::string finish_reason;
  json usage;
  for (size_t i = 0; i + 1 < payloads.size(); ++i) {
    const json chunk = json::parse(payloads[i]);
    EXPECT_EQ(chunk["object"], "text_completion");
    if (chunk["choices"].empty()) {
      usage = chunk["usage"];
      continue;
    }
    text += chunk["choices"][0]["text"].get<std::string>();
    if (!chunk["choices"][0]["finish_reason"].is_null())
      finish_reason = chunk["choices"][0]["finish_reason"];
  }
  EXPECT_EQ(text, whole["choices"][0]["text"].get<std::string>());
  EXPECT_EQ(finish_reason, whole["choices"][0]["finish_reason"].get<std::string>());
  EXPECT_EQ(usage["completion_tokens"], whole["usage"]["completion_tokens"]);

  // The connection is still good for another request (chunked, keep-alive).
  EXPECT_EQ(http.send("GET", "/health").status, 200);
}

TEST(Completions, StopStringsEndTheTextBeforeTheStop) {
  TestServer server;
  const json free_run = server.complete({{"prompt", "The history of the city"}, {"max_tokens", 60},
                                         {"temperature", 0}, {"ignore_eos", true}});
  const std::string text = free_run["choices"][0]["text"];
  ASSERT_GT(text.size(), 20u);
  // Stop at a word that occurs in the middle of the free-running text.
  const std::string stop = text.substr(text.size() / 2, 4);
  const size_t first = text.find(stop);
  for (bool stream : {false, true}) {
    json body = {{"prompt", "The history of the city"}, {"max_tokens", 60}, {"temperature", 0},
                 {"ignore_eos", true}, {"stop", {"zzzz-never", stop}}};
    std::string got;
    std::string reason;
    if (!stream) {
      const json reply = server.complete(body);
      got = reply["choices"][0]["text"];
      reason = reply["choices"][0]["finish_reason"];
    } else {
      body["stream"] = true;
      HttpClient http(server.port());
      for (const std::string& payload : sse_payloads(http.post_json("/v1/completions", body.dump()).body)) {
        if (payload == "[DONE]") continue;
        const json chunk = json::parse(payload);
        got += chunk["choices"][0]["text"].get<std::string>();
        if (!chunk["choices"][0]["finish_reason"].is_null()) reason = chunk["choices"][0]["finish_reason"];
      }
    }
    EXPECT_EQ(got, text.substr(0, first)) << "stream=" << stream;
    EXPECT_EQ(reason, "stop");
  }
}

TEST(Completions, ThirtyTwoConcurrentSeededRequestsMatchTheSameRequestsOneAtATime) {
  TinyDeployment invariant;
  invariant.batch_invariant = true;  // 32 sessions × (γ+1) rows pass 64
  TestServer server(invariant);
  std::vector<json> bodies;
  for (int i = 0; i < 32; ++i) {
    json body = {{"prompt", kPrompts[static_cast<size_t>(i) % kPrompts.size()]},
                 {"max_tokens", 24 + i % 9}, {"seed", 1000 + i}};
    body["temperature"] = i % 4 == 0 ? 0.0 : 0.7 + 0.1 * (i % 3);
    if (i % 3 == 1) body["top_p"] = 0.9;
    if (i % 5 == 2) body["top_k"] = 20;
    // Fixed γ per request (1..6), so that seeded sampled text replays exactly.
    body["speculation"] = {{"drafter", i % 7 == 3 ? "ngram" : "model"}, {"gamma", 1 + i % 6}};
    bodies.push_back(body);
  }
  std::vector<std::string> one_at_a_time;
  for (const json& body : bodies) one_at_a_time.push_back(server.complete(body)["choices"][0]["text"]);

  std::vector<std::future<std::string>> concurrent;
  for (const json& body : bodies)
    concurrent.push_back(std::async(std::launch::async, [&server, body] {
      return server.complete(body)["choices"][0]["text"].get<std::string>();
    }));
  for (size_t i = 0; i < bodies.size(); ++i)
    EXPECT_EQ(concurrent[i].get(), one_at_a_time[i]) << "request " << i << ": " << bodies[i].dump();
  // They really shared steps: fewer target passes than tokens generated.
  EXPECT_GT(server.metric("tandem_generation_tokens_total"), server.metric("tandem_target_steps_total"));
}

TEST(Completions, ModelsHealthAndReady) {
  TestServer server;
  HttpClient http(server.port());
  const auto models = http.send("GET", "/v1/models");
  ASSERT_EQ(models.status, 200);
  const json list = json::parse(models.body);
  EXPECT_EQ(list["object"], "list");
  EXPECT_EQ(list["data"][0]["id"], "tandem");
  EXPECT_EQ(list["data"][0]["max_model_len"], 256);
  EXPECT_EQ(http.send("GET", "/health").status, 200);
  EXPECT_EQ(json::parse(http.send("GET", "/ready").body)["status"], "ready");
}

}  // namespace
}  // namespace tandem
