#include "coordinator/api/completion_response.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>
#include <vector>

namespace tandem::api {
namespace {

using nlohmann::json;

using Keys = std::vector<std::string>;

// An object's keys, sorted (so the comparison is about which keys, not order).
Keys keys_of(const json& object) {
  Keys keys;
  for (const auto& [key, value] : object.items()) keys.push_back(key);
  std::sort(keys.begin(), keys.end());
  return keys;
}

Keys sorted(Keys keys) {
  std::sort(keys.begin(), keys.end());
  return keys;
}

SpeculationReport sample_report() {
  SpeculationReport report;
  report.target_steps = 12;
  report.draft_tokens = 40;
  report.accepted_tokens = 31;
  report.acceptance_rate = 0.775;
  report.gamma_policy = "auto";
  report.drafter = "model";
  report.lossless = true;
  report.coupling = "gumbel";
  return report;
}

void expect_report(const json& got, const SpeculationReport& want) {
  EXPECT_EQ(keys_of(got), sorted(Keys{"target_steps", "draft_tokens", "accepted_tokens", "acceptance_rate",
                               "gamma_policy", "drafter", "lossless", "coupling"}));
  EXPECT_EQ(got.at("target_steps"), want.target_steps);
  EXPECT_EQ(got.at("draft_tokens"), want.draft_tokens);
  EXPECT_EQ(got.at("accepted_tokens"), want.accepted_tokens);
  EXPECT_DOUBLE_EQ(got.at("acceptance_rate").get<double>(), want.acceptance_rate);
  EXPECT_EQ(got.at("gamma_policy"), want.gamma_policy);
  EXPECT_EQ(got.at("drafter"), want.drafter);
  EXPECT_EQ(got.at("lossless"), want.lossless);
  EXPECT_EQ(got.at("coupling"), want.coupling);
}

void expect_usage(const json& got, const Usage& want) {
  EXPECT_EQ(keys_of(got), sorted(Keys{"completion_tokens", "prompt_tokens", "prompt_tokens_details",
                                      "total_tokens"}));
  EXPECT_EQ(got.at("prompt_tokens_details"), json({{"cached_tokens", want.cached_tokens}}));
  EXPECT_EQ(got.at("prompt_tokens"), want.prompt_tokens);
  EXPECT_EQ(got.at("completion_tokens"), want.completion_tokens);
  EXPECT_EQ(got.at("total_tokens"), want.prompt_tokens + want.completion_tokens);
}

void expect_header(const json& body, const std::string& id, int64_t created, const std::string& model) {
  EXPECT_EQ(body.at("id"), id);
  EXPECT_EQ(body.at("object"), "text_completion");
  EXPECT_EQ(body.at("created"), created);
  EXPECT_EQ(body.at("model"), model);
}

void expect_choice(const json& choices, const std::string& text, const json& finish_reason) {
  ASSERT_TRUE(choices.is_array());
  ASSERT_EQ(choices.size(), 1u);
  const json& choice = choices[0];
  EXPECT_EQ(keys_of(choice), sorted(Keys{"finish_reason", "index", "logprobs", "text"}));
  EXPECT_EQ(choice.at("text"), text);
  EXPECT_EQ(choice.at("index"), 0);
  EXPECT_TRUE(choice.at("logprobs").is_null());
  EXPECT_EQ(choice.at("finish_reason"), finish_reason);
}

TEST(CompletionResponse, WholeCompletionHasOpenAIsShapePlusSpeculation) {
  const std::string text = "line one\n\"quoted\" caf\xc3\xa9 \xf0\x9f\x98\x80";
  const Usage usage{.prompt_tokens = 7, .completion_tokens = 33, .cached_tokens = 4};
  const SpeculationReport report = sample_report();
  const json body = json::parse(
      completion_json("cmpl-abc", 1700000000, "tandem-tiny", text, "length", usage, report));
  EXPECT_EQ(keys_of(body), sorted(Keys{"choices", "created", "id", "model", "object", "speculation", "usage"}));
  expect_header(body, "cmpl-abc", 1700000000, "tandem-tiny");
  expect_choice(body.at("choices"), text, "length");
  expect_usage(body.at("usage"), usage);
  expect_report(body.at("speculation"), report);
}

TEST(CompletionResponse, KeysComeInOpenAIsOrder) {
  const std::string text =
      completion_json("cmpl-x", 1, "m", "t", "stop", Usage{1, 2}, sample_report());
  EXPECT_LT(text.find("\"id\""), text.find("\"object\""));
  EXPECT_LT(text.find("\"object\""), text.find("\"created\""));
  EXPECT_LT(text.find("\"model\""), text.find("\"choices\""));
  EXPECT_LT(text.find("\"choices\""), text.find("\"usage\""));
  EXPECT_LT(text.find("\"usage\""), text.find("\"speculation\""));
}

TEST(CompletionResponse, PlainDecodingAndUndefinedRatesStillParse) {
  SpeculationReport plain;
  plain.target_steps = 5;
  plain.acceptance_rate = std::nan("");
  plain.gamma_policy = "0";
  plain.drafter = "none";
  plain.lossless = false;
  const json body = json::parse(completion_json("cmpl-p", 2, "m", "", "stop", Usage{3, 5}, plain));
  expect_choice(body.at("choices"), "", "stop");
  EXPECT_TRUE(body["speculation"]["acceptance_rate"].is_null());
  EXPECT_EQ(body["speculation"]["drafter"], "none");
  EXPECT_EQ(body["speculation"]["lossless"], false);
  EXPECT_EQ(body["usage"]["total_tokens"], 8);
}

TEST(CompletionResponse, InvalidUtf8TextIsReplacedNotThrown) {
  const json body = json::parse(
      completion_json("cmpl-u", 3, "m", "ab\xe2\x82", "length", Usage{1, 1}, sample_report()));
  EXPECT_EQ(body["choices"][0]["text"], "ab\xef\xbf\xbd");
  const json chunk = json::parse(chunk_json("cmpl-u", 3, "m", "\xff", std::nullopt));
  EXPECT_EQ(chunk["choices"][0]["text"], "\xef\xbf\xbd");
}

TEST(CompletionResponse, ChunksCarryTheDeltaAndFinishOnlyAtTheEnd) {
  const json middle = json::parse(chunk_json("cmpl-s", 9, "tandem-tiny", " world", std::nullopt));
  EXPECT_EQ(keys_of(middle), sorted(Keys{"choices", "created", "id", "model", "object"}));
  expect_header(middle, "cmpl-s", 9, "tandem-tiny");
  expect_choice(middle.at("choices"), " world", nullptr);

  const json last = json::parse(chunk_json("cmpl-s", 9, "tandem-tiny", "", "stop"));
  expect_choice(last.at("choices"), "", "stop");
  EXPECT_FALSE(last.contains("usage"));

  const json with_usage = json::parse(chunk_json("cmpl-s", 9, "tandem-tiny", "x", std::nullopt, true));
  ASSERT_TRUE(with_usage.contains("usage"));
  EXPECT_TRUE(with_usage.at("usage").is_null());
}

TEST(CompletionResponse, UsageChunkHasNoChoices) {
  const Usage usage{.prompt_tokens = 4, .completion_tokens = 10, .cached_tokens = 2};
  const SpeculationReport report = sample_report();
  const json body = json::parse(usage_chunk_json("cmpl-s", 9, "tandem-tiny", usage, report));
  EXPECT_EQ(keys_of(body), sorted(Keys{"choices", "created", "id", "model", "object", "speculation", "usage"}));
  expect_header(body, "cmpl-s", 9, "tandem-tiny");
  EXPECT_TRUE(body.at("choices").is_array());
  EXPECT_TRUE(body.at("choices").empty());
  expect_usage(body.at("usage"), usage);
  expect_report(body.at("speculation"), report);
}

TEST(CompletionResponse, ModelsListNamesTheServedModel) {
  const json body = json::parse(models_json("tandem-tiny", 1690000000, "tandem", 2048));
  EXPECT_EQ(keys_of(body), sorted(Keys{"data", "object"}));
  EXPECT_EQ(body.at("object"), "list");
  ASSERT_EQ(body.at("data").size(), 1u);
  const json& model = body["data"][0];
  EXPECT_EQ(keys_of(model), sorted(Keys{"created", "id", "max_model_len", "object", "owned_by"}));
  EXPECT_EQ(model.at("id"), "tandem-tiny");
  EXPECT_EQ(model.at("object"), "model");
  EXPECT_EQ(model.at("created"), 1690000000);
  EXPECT_EQ(model.at("owned_by"), "tandem");
  EXPECT_EQ(model.at("max_model_len"), 2048);
}

TEST(ServerSentEvents, FrameOneJsonPerEventAndEndWithDone) {
  const std::string chunk = chunk_json("cmpl-s", 1, "m", "a\n\nb", std::nullopt);
  const std::string event = sse_event(chunk);
  ASSERT_TRUE(event.starts_with("data: "));
  ASSERT_TRUE(event.ends_with("\n\n"));
  const std::string payload = event.substr(6, event.size() - 8);
  // The text's own newlines are escaped, so the blank line ends the event.
  EXPECT_EQ(payload.find('\n'), std::string::npos);
  EXPECT_EQ(json::parse(payload)["choices"][0]["text"], "a\n\nb");
  EXPECT_EQ(sse_done(), "data: [DONE]\n\n");
}

bool is_valid_completion_id(const std::string& id) {
  if (id.size() != 5 + 24 || !id.starts_with("cmpl-")) return false;
  for (std::size_t i = 5; i < id.size(); ++i) {
    const char c = id[i];
    const bool alphanumeric = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (!alphanumeric) return false;
  }
  return true;
}

TEST(CompletionId, IsCmplAnd24AlphanumericsAndUniqueAcrossThreads) {
  constexpr int kThreads = 8;
  constexpr int kPerThread = 2000;
  std::mutex mutex;
  std::set<std::string> ids;
  std::set<char> characters_seen;
  int invalid = 0;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      std::vector<std::string> mine;
      for (int i = 0; i < kPerThread; ++i) mine.push_back(new_completion_id());
      const std::lock_guard lock(mutex);
      for (const std::string& id : mine) {
        invalid += !is_valid_completion_id(id);
        for (std::size_t i = 5; i < id.size(); ++i) characters_seen.insert(id[i]);
        ids.insert(id);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(invalid, 0);
  EXPECT_EQ(ids.size(), static_cast<std::size_t>(kThreads * kPerThread));
  // 384k draws from 62 symbols: every letter and digit shows up.
  EXPECT_EQ(characters_seen.size(), 62u);
}

TEST(CompletionResponse, SeveralChoicesAreIndexedByPosition) {
  const nlohmann::json body = nlohmann::json::parse(completion_json(
      "cmpl-x", 1, "tandem", {{"one", "stop"}, {"two", "length"}, {"three", "stop"}}, Usage{4, 9},
      SpeculationReport{}));
  ASSERT_EQ(body["choices"].size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(body["choices"][i]["index"], i);
  EXPECT_EQ(body["choices"][1]["text"], "two");
  EXPECT_EQ(body["choices"][1]["finish_reason"], "length");
  EXPECT_EQ(body["usage"]["total_tokens"], 13);
  const nlohmann::json chunk = nlohmann::json::parse(chunk_json("cmpl-x", 1, "tandem", "t", std::nullopt, false, 5));
  EXPECT_EQ(chunk["choices"][0]["index"], 5);
}

}  // namespace
}  // namespace tandem::api
