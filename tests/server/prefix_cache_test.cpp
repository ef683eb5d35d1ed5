// Prefix caching as a client sees it (docs/serving.md, "Prefix caching"):
// a repeated prompt reports usage.prompt_tokens_details.cached_tokens and
// the same text as the first time, a different cache_salt never hits, a bad
// cache_salt is a 400 naming it, the next chat turn reuses the previous
// one, /metrics counts queries and hits for target and draft, and with
// `scheduler.prefix_caching: false` nothing is cached and the text is the
// same as with it on.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "tests/server/test_server.h"

namespace tandem {
namespace {

using nlohmann::json;
using test_support::HttpClient;
using test_support::sse_payloads;
using test_support::TestServer;
using test_support::TinyDeployment;

constexpr int kBlockSize = 16;  // the deployments' scheduler.block_size (its default)

// A prompt of `length` token ids of its own (`seed` keeps tests' prompts
// apart, so that one test's cache never serves another's).
std::vector<int32_t> prompt_ids(int seed, int length) {
  std::vector<int32_t> ids;
  for (int i = 0; i < length; ++i) ids.push_back((seed * 997 + i * 31) % 4000);
  return ids;
}

json completion(const std::vector<int32_t>& prompt, std::optional<uint64_t> seed = std::nullopt) {
  json body = {{"prompt", prompt}, {"max_tokens", 12}, {"ignore_eos", true}};
  if (seed) {
    body["seed"] = *seed;
    body["temperature"] = 0.9;
  } else {
    body["temperature"] = 0;
  }
  return body;
}

int cached_tokens(const json& reply) {
  return reply.at("usage").at("prompt_tokens_details").at("cached_tokens").get<int>();
}

// What a prompt of `length` tokens finds when all of it was seen before:
// every whole block before its last token, which is fed again for its logits.
int whole_blocks_before_last(int prompt_length) {
  return (prompt_length - 1) / kBlockSize * kBlockSize;
}

void expect_cached_prefix(int cached, int prompt_length) {
  EXPECT_GT(cached, 0);
  EXPECT_EQ(cached, whole_blocks_before_last(prompt_length));
}

// Cached K/V equal a fresh prefill's only when the forward pass is
// batch-invariant (always on the cpu; on cuda when asked): a prefill of
// the whole prompt and one of its uncached tail are batches of different
// sizes.
TinyDeployment invariant(const std::string& scheduler = "") {
  TinyDeployment deployment;
  deployment.batch_invariant = true;
  deployment.scheduler = scheduler;
  return deployment;
}

// One server for the suite with caching on (the default); each case uses
// prompts of its own.
class PrefixCache : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = std::make_unique<TestServer>(invariant()); }
  static void TearDownTestSuite() { server_.reset(); }
  static std::unique_ptr<TestServer> server_;
};
std::unique_ptr<TestServer> PrefixCache::server_;

TEST_F(PrefixCache, ServeLogsTheSetting) {
  EXPECT_NE(server_->log_text().find("prefix caching on, keeping up to every free block cached"),
            std::string::npos)
      << server_->log_text();
}

TEST_F(PrefixCache, ABadCacheSaltIsA400NamingIt) {
  const json messages = json::array({{{"role", "user"}, {"content", "Hi"}}});
  for (const std::string route : {"/v1/completions", "/v1/chat/completions"}) {
    for (const json& salt : {json(5), json(true), json::array({"a"}), json{{"k", "v"}}}) {
      SCOPED_TRACE(route + " " + salt.dump());
      json body = route == "/v1/completions" ? json{{"prompt", "Hi"}} : json{{"messages", messages}};
      body["cache_salt"] = salt;
      HttpClient http(server_->port());
      const auto reply = http.post_json(route, body.dump());
      EXPECT_EQ(reply.status, 400) << reply.body;
      EXPECT_EQ(json::parse(reply.body)["error"]["param"], "cache_salt") << reply.body;
    }
  }
}

TEST_F(PrefixCache, ARepeatedPromptIsCachedAndGivesTheSameText) {
  for (const std::optional<uint64_t> seed : {std::optional<uint64_t>{}, std::optional<uint64_t>{77}}) {
    SCOPED_TRACE(seed ? "seeded" : "greedy");
    const std::vector<int32_t> prompt = prompt_ids(seed ? 2 : 1, 70);
    const json first = server_->complete(completion(prompt, seed));
    EXPECT_EQ(cached_tokens(first), 0);
    const json second = server_->complete(completion(prompt, seed));
    expect_cached_prefix(cached_tokens(second), 70);
    EXPECT_EQ(second["choices"][0]["text"], first["choices"][0]["text"]);
    EXPECT_EQ(second["usage"]["prompt_tokens"], 70);
  }
}

TEST_F(PrefixCache, TheStreamsUsageChunkReportsCachedTokens) {
  const std::vector<int32_t> prompt = prompt_ids(3, 40);
  const json first = server_->complete(completion(prompt));
  json body = completion(prompt);
  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  HttpClient http(server_->port());
  const auto reply = http.post_json("/v1/completions", body.dump());
  ASSERT_EQ(reply.status, 200) << reply.body;
  const std::vector<std::string> payloads = sse_payloads(reply.body);
  ASSERT_GE(payloads.size(), 2u);
  const json usage_chunk = json::parse(payloads[payloads.size() - 2]);  // before [DONE]
  expect_cached_prefix(cached_tokens(usage_chunk), 40);
  std::string text;
  for (size_t i = 0; i + 2 < payloads.size(); ++i)
    text += json::parse(payloads[i])["choices"][0]["text"].get<std::string>();
  EXPECT_EQ(text, first["choices"][0]["text"].get<std::string>());
}

TEST_F(PrefixCache, DifferentSaltsNeverShare) {
  const std::vector<int32_t> prompt = prompt_ids(4, 50);
  json unsalted = completion(prompt);
  const json plain = server_->complete(unsalted);
  json salted = completion(prompt);
  salted["cache_salt"] = "tenant-a";
  EXPECT_EQ(cached_tokens(server_->complete(salted)), 0);  // not the unsalted blocks
  const json again = server_->complete(salted);
  expect_cached_prefix(cached_tokens(again), 50);  // its own
  EXPECT_EQ(again["choices"][0]["text"], plain["choices"][0]["text"]);
  salted["cache_salt"] = "tenant-b";
  EXPECT_EQ(cached_tokens(server_->complete(salted)), 0);
  // An empty salt is none: it finds the unsalted blocks.
  unsalted["cache_salt"] = "";
  expect_cached_prefix(cached_tokens(server_->complete(unsalted)), 50);
}

TEST_F(PrefixCache, TheNextChatTurnReusesThePreviousOne) {
  json messages = json::array(
      {{{"role", "system"}, {"content", "You are a careful assistant who answers in full sentences."}},
       {{"role", "user"}, {"content", "Tell me about the old city by the river and its bridges."}}});
  const json body = {{"messages", messages}, {"max_tokens", 20}, {"temperature", 0}};
  const json first = server_->chat(body);
  EXPECT_EQ(cached_tokens(first), 0);
  const int first_prompt = first["usage"]["prompt_tokens"].get<int>();
  const json repeat = server_->chat(body);
  expect_cached_prefix(cached_tokens(repeat), first_prompt);
  EXPECT_EQ(repeat["choices"][0]["message"], first["choices"][0]["message"]);

  messages.push_back(first["choices"][0]["message"]);
  messages.push_back({{"role", "user"}, {"content", "And the bridges?"}});
  const json next = server_->chat({{"messages", messages}, {"max_tokens", 8}, {"temperature", 0}});
  // At least the first turn's prompt is found again.
  EXPECT_GE(cached_tokens(next), whole_blocks_before_last(first_prompt));
  EXPECT_LT(cached_tokens(next), next["usage"]["prompt_tokens"].get<int>());
}

TEST_F(PrefixCache, MetricsCountQueriesAndHitsForTargetAndDraft) {
  TestServer& server = *server_;
  const auto metric = [&server](const std::string& name, const std::string& model) {
    return server.metric(name + "{model=\"" + model + "\"}");
  };
  const double queries = metric("tandem_prefix_cache_queries_total", "target");
  const double hits = metric("tandem_prefix_cache_hits_total", "target");
  const double draft_hits = metric("tandem_prefix_cache_hits_total", "draft");
  ASSERT_GE(queries, 0);  // the series exist
  ASSERT_GE(hits, 0);
  ASSERT_GE(draft_hits, 0);
  ASSERT_GE(metric("tandem_kv_cache_blocks_cached", "target"), 0);

  // A fixed γ: the draft model drafts (and looks its cache up) for certain.
  json body = completion(prompt_ids(6, 60));
  body["speculation"] = {{"gamma", 4}};
  server.complete(body);
  const json second = server.complete(body);
  const double queries_after = metric("tandem_prefix_cache_queries_total", "target");
  const double hits_after = metric("tandem_prefix_cache_hits_total", "target");
  // Each admission looks its whole prompt up; the hits are what usage reported.
  EXPECT_EQ(queries_after - queries, 2 * 60);
  EXPECT_EQ(hits_after - hits, cached_tokens(second));
  EXPECT_GT(metric("tandem_prefix_cache_hits_total", "draft"), draft_hits);
  EXPECT_GE(metric("tandem_kv_cache_blocks_cached", "target"), 60 / kBlockSize);
}

// The suite's server (caching on) against one with caching off.
TEST_F(PrefixCache, WithCachingOffNothingIsCachedAndTheTextIsTheSame) {
  TestServer plain(invariant("  prefix_caching: false\n"));
  EXPECT_NE(plain.log_text().find("prefix caching off"), std::string::npos) << plain.log_text();
  TestServer& cached = *server_;
  for (const std::optional<uint64_t> seed : {std::optional<uint64_t>{}, std::optional<uint64_t>{5}}) {
    SCOPED_TRACE(seed ? "seeded" : "greedy");
    const json body = completion(prompt_ids(seed ? 8 : 7, 48), seed);
    const json reference = plain.complete(body);
    EXPECT_EQ(cached_tokens(plain.complete(body)), 0);
    EXPECT_EQ(cached_tokens(cached.complete(body)), 0);
    const json reused = cached.complete(body);
    expect_cached_prefix(cached_tokens(reused), 48);
    EXPECT_EQ(reused["choices"][0]["text"], reference["choices"][0]["text"]);
  }
  EXPECT_EQ(plain.metric("tandem_prefix_cache_hits_total{model=\"target\"}"), 0);
  EXPECT_EQ(plain.metric("tandem_kv_cache_blocks_cached{model=\"target\"}"), 0);
}

}  // namespace
}  // namespace tandem
