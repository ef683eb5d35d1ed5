// n, best_of and prompt lists end to end on the tiny pair: one request fans
// out into several engine sessions, and its choices come back indexed as
// OpenAI does (prompt × n + choice), whole or streamed.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <thread>

#include "common/tokenizer/tokenizer.h"
#include "tests/server/test_server.h"
#include "tests/support/eventually.h"

namespace tandem {
namespace {

using nlohmann::json;
using test_support::eventually;
using test_support::HttpClient;
using test_support::sse_payloads;
using test_support::TestServer;
using test_support::TinyDeployment;

std::vector<std::string> texts_of(const json& reply) {
  std::vector<std::string> texts;
  for (size_t i = 0; i < reply["choices"].size(); ++i) {
    EXPECT_EQ(reply["choices"][i]["index"], static_cast<int>(i));
    texts.push_back(reply["choices"][i]["text"]);
  }
  return texts;
}

// Choices are compared with the same request sent alone: on CUDA that holds
// only with the batch-invariant kernels (n sequences prefill more rows).
TinyDeployment batch_invariant() {
  TinyDeployment deployment;
  deployment.batch_invariant = true;
  return deployment;
}

bool kv_blocks_all_free(const TestServer& server) {
  return server.metric("tandem_kv_cache_blocks_used{model=\"target\"}") == 0 &&
         server.metric("tandem_kv_cache_blocks_used{model=\"draft\"}") == 0;
}

// A fixed γ: seeded sampled text replays exactly (docs/serving.md).
json sampled(int n) {
  return {{"prompt", "When the war ended"}, {"max_tokens", 24}, {"temperature", 1.0}, {"seed", 11},
          {"ignore_eos", true}, {"n", n}, {"speculation", {{"gamma", 4}}}};
}

TEST(Choices, SeededNReplaysDiffersPerChoiceAndChoiceZeroIsTheSingleRequest) {
  TestServer server(batch_invariant());
  const json first = server.complete(sampled(4));
  const json again = server.complete(sampled(4));
  const std::vector<std::string> texts = texts_of(first);
  ASSERT_EQ(texts.size(), 4u);
  EXPECT_EQ(texts_of(again), texts);
  EXPECT_EQ(std::set<std::string>(texts.begin(), texts.end()).size(), 4u) << first.dump();
  const json single = server.complete(sampled(1));
  EXPECT_EQ(single["choices"][0]["text"], texts[0]);
  // One prompt: its tokens counted once; every choice's tokens counted.
  EXPECT_EQ(first["usage"]["prompt_tokens"], single["usage"]["prompt_tokens"]);
  EXPECT_EQ(first["usage"]["completion_tokens"], 4 * single["usage"]["completion_tokens"].get<int>());
  EXPECT_GE(first["speculation"]["draft_tokens"].get<int>(), single["speculation"]["draft_tokens"].get<int>());
}

TEST(Choices, NSequencesFreeAllTheirKvBlocksWhetherTheyFinishOrTheClientLeaves) {
  TestServer server;
  ASSERT_TRUE(kv_blocks_all_free(server));
  const double free_at_rest = server.metric("tandem_kv_cache_blocks_free{model=\"target\"}");
  server.complete(sampled(4));
  EXPECT_TRUE(eventually([&] { return kv_blocks_all_free(server); }));
  EXPECT_EQ(server.metric("tandem_kv_cache_blocks_free{model=\"target\"}"), free_at_rest);

  // A client that leaves mid-stream cancels every one of its n sessions.
  {
    HttpClient http(server.port());
    json body = sampled(4);
    body["max_tokens"] = 200;
    body["stream"] = true;
    const std::string text = body.dump();
    http.write_raw("POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                   "Content-Length: " + std::to_string(text.size()) + "\r\n\r\n" + text);
    http.read_until("data: ");
    http.close();
  }
  EXPECT_TRUE(eventually([&] {
    return server.metric("tandem_request_success_total{finished_reason=\"cancelled\"}") == 4;
  }));
  EXPECT_TRUE(eventually([&] { return kv_blocks_all_free(server); }));
  EXPECT_EQ(server.metric("tandem_kv_cache_blocks_free{model=\"target\"}"), free_at_rest);
}

TEST(Choices, APromptBatchAnswersInOrderEachChoiceAsItsSingleRequest) {
  TestServer server(batch_invariant());
  const Tokenizer tokenizer = Tokenizer::load(std::string(TANDEM_SOURCE_DIR) + "/models/tiny/target");
  const json prompts = json::array({"The old man", tokenizer.encode("She said that", true), "It was a long"});
  const json batch = server.complete({{"prompt", prompts}, {"n", 2}, {"max_tokens", 12}, {"temperature", 0}});
  const std::vector<std::string> texts = texts_of(batch);
  ASSERT_EQ(texts.size(), 6u);
  int prompt_tokens = 0, completion_tokens = 0;
  for (size_t p = 0; p < prompts.size(); ++p) {
    const json single = server.complete({{"prompt", prompts[p]}, {"max_tokens", 12}, {"temperature", 0}});
    for (size_t i = 0; i < 2; ++i) EXPECT_EQ(texts[p * 2 + i], single["choices"][0]["text"].get<std::string>()) << p << "," << i;
    prompt_tokens += single["usage"]["prompt_tokens"].get<int>();
    completion_tokens += 2 * single["usage"]["completion_tokens"].get<int>();
  }
  EXPECT_EQ(batch["usage"]["prompt_tokens"], prompt_tokens);
  EXPECT_EQ(batch["usage"]["completion_tokens"], completion_tokens);
}

// Per index: the concatenated text, the finish reasons seen, and the usage chunk.
struct StreamedChoices {
  std::map<int, std::string> text;
  std::map<int, std::vector<std::string>> finishes;
  json usage;
};

StreamedChoices stream(const TestServer& server, const std::string& path, json body,
                       const std::string& text_of) {
  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  HttpClient http(server.port());
  const auto reply = http.post_json(path, body.dump());
  EXPECT_EQ(reply.status, 200) << reply.body;
  const std::vector<std::string> payloads = sse_payloads(reply.body);
  EXPECT_EQ(payloads.back(), "[DONE]");
  StreamedChoices out;
  for (size_t i = 0; i + 1 < payloads.size(); ++i) {
    const json chunk = json::parse(payloads[i]);
    if (chunk["choices"].empty()) {
      EXPECT_EQ(i + 2, payloads.size()) << "the usage chunk comes last";
      out.usage = chunk["usage"];
      continue;
    }
    const json& choice = chunk["choices"][0];
    const int index = choice["index"];
    const json& piece = text_of == "text" ? choice["text"] : choice["delta"].value("content", json(""));
    out.text[index] += piece.get<std::string>();
    if (!choice["finish_reason"].is_null()) out.finishes[index].push_back(choice["finish_reason"]);
  }
  return out;
}

TEST(Choices, StreamingWithNGivesEveryIndexItsTextAndOneFinish) {
  TestServer server(batch_invariant());
  json body = sampled(3);
  body["prompt"] = json::array({"When the war ended", "The old man"});  // indexes 0..5
  const json whole = server.complete(body);
  const StreamedChoices streamed = stream(server, "/v1/completions", body, "text");
  ASSERT_EQ(whole["choices"].size(), 6u);
  ASSERT_EQ(streamed.text.size(), 6u);
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(streamed.text.at(i), whole["choices"][i]["text"].get<std::string>()) << i;
    ASSERT_EQ(streamed.finishes.count(i), 1u) << i;
    ASSERT_EQ(streamed.finishes.at(i).size(), 1u) << i;
    EXPECT_EQ(streamed.finishes.at(i)[0], whole["choices"][i]["finish_reason"].get<std::string>()) << i;
  }
  EXPECT_EQ(streamed.usage, whole["usage"]);
}

TEST(Choices, ChatNGivesEachChoiceItsOwnMessageWholeOrStreamed) {
  TestServer server(batch_invariant());
  json body = {{"messages", json::array({{{"role", "user"}, {"content", "Tell me about the old city."}}})},
               {"max_tokens", 16}, {"temperature", 1.0}, {"seed", 5}, {"ignore_eos", true},
               {"speculation", {{"gamma", 4}}}};
  const json single = server.chat(body);
  body["n"] = 3;
  const json whole = server.chat(body);
  ASSERT_EQ(whole["choices"].size(), 3u);
  std::set<std::string> contents;
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(whole["choices"][i]["index"], i);
    EXPECT_EQ(whole["choices"][i]["message"]["role"], "assistant");
    contents.insert(whole["choices"][i]["message"]["content"].get<std::string>());
  }
  EXPECT_EQ(contents.size(), 3u);
  EXPECT_EQ(whole["choices"][0]["message"]["content"], single["choices"][0]["message"]["content"]);
  EXPECT_EQ(whole["usage"]["prompt_tokens"], single["usage"]["prompt_tokens"]);
  const StreamedChoices streamed = stream(server, "/v1/chat/completions", body, "content");
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(streamed.text.at(i), whole["choices"][i]["message"]["content"].get<std::string>()) << i;
    EXPECT_EQ(streamed.finishes.at(i), std::vector<std::string>{"length"}) << i;
  }
  EXPECT_EQ(streamed.usage, whole["usage"]);
}

TEST(Choices, AllSequencesAreQueuedOrNone) {
  TinyDeployment small_queue;
  small_queue.scheduler = "  max_queued_requests: 2\n";
  TestServer server(small_queue);
  HttpClient http(server.port());
  const auto refused = http.post_json("/v1/completions", sampled(4).dump());
  EXPECT_EQ(refused.status, 429) << refused.body;
  EXPECT_EQ(server.metric("tandem_prompt_tokens_total"), 0);  // not one of them ran
  EXPECT_EQ(http.post_json("/v1/completions", sampled(2).dump()).status, 200);
}

// A sequence that ends in an error (here: past the request's deadline) ends
// the request with that error, whole or streamed, and frees every session.
TEST(Choices, AnErrorInOneSequenceIsTheRequestsAnswer) {
  TinyDeployment deployment;
  deployment.server = "  request_timeout_seconds: 0.01\n";
  TestServer server(deployment);
  json body = {{"prompt", "The"}, {"max_tokens", 250}, {"temperature", 0}, {"ignore_eos", true}, {"n", 3}};
  HttpClient http(server.port());
  const auto whole = http.post_json("/v1/completions", body.dump());
  EXPECT_EQ(whole.status, 504) << whole.body;
  EXPECT_EQ(json::parse(whole.body)["error"]["type"], "timeout_error");
  body["stream"] = true;
  const std::vector<std::string> payloads = sse_payloads(http.post_json("/v1/completions", body.dump()).body);
  ASSERT_GE(payloads.size(), 2u);
  EXPECT_EQ(payloads.back(), "[DONE]");
  EXPECT_TRUE(json::parse(payloads[payloads.size() - 2]).contains("error")) << payloads[payloads.size() - 2];
  EXPECT_TRUE(eventually([&] { return kv_blocks_all_free(server); }));
}

TEST(Choices, BestOfGeneratesBestOfSequencesAndReturnsNOfThem) {
  TestServer server(batch_invariant());
  const std::vector<std::string> four = texts_of(server.complete(sampled(4)));
  json body = sampled(2);
  body["best_of"] = 4;
  const json reply = server.complete(body);
  const std::vector<std::string> two = texts_of(reply);
  ASSERT_EQ(two.size(), 2u);
  // The same seeds as n = 4: the returned ones are two of those, distinct.
  for (const std::string& text : two) EXPECT_NE(std::find(four.begin(), four.end(), text), four.end()) << text;
  EXPECT_NE(two[0], two[1]);
  // Every generated token is counted, the discarded sequences' too.
  EXPECT_EQ(reply["usage"]["completion_tokens"], 4 * 24);
  EXPECT_TRUE(eventually([&] { return kv_blocks_all_free(server); }));
}

// Passes once the engine reports logprobs (the logprobs part of this issue):
// best_of returns, of the best_of sequences the same seed gives, the n with
// the highest cumulative logprob.
TEST(Choices, BestOfReturnsTheMostLikelySequences) {
  TestServer server(batch_invariant());
  json all = sampled(4);
  all["logprobs"] = 0;
  const json four = server.complete(all);
  ASSERT_EQ(four["choices"].size(), 4u);
  std::vector<std::pair<double, std::string>> scored;
  for (const json& choice : four["choices"]) {
    double sum = 0;
    for (const json& logprob : choice["logprobs"]["token_logprobs"]) sum += logprob.get<double>();
    scored.emplace_back(sum, choice["text"]);
  }
  std::stable_sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  json best = sampled(2);
  best["best_of"] = 4;
  const json reply = server.complete(best);
  ASSERT_EQ(reply["choices"].size(), 2u);
  EXPECT_EQ(reply["choices"][0]["text"], scored[0].second);
  EXPECT_EQ(reply["choices"][1]["text"], scored[1].second);
  EXPECT_TRUE(reply["choices"][0]["logprobs"].is_null());  // not asked for
}

}  // namespace
}  // namespace tandem
