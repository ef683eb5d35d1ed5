// Tests of tools/loadtest/chat_request.h: the chat body a workload item or a
// history becomes, its merge order, and the --endpoint names.
#include "tools/loadtest/chat_request.h"

#include <gtest/gtest.h>

#include "tests/support/expect_error.h"
#include "tools/loadtest/completion_client.h"

namespace tandem::loadtest {
namespace {

using nlohmann::json;

TEST(ChatRequestBody, AWorkItemBecomesOneUserMessageWithTheSameFields) {
  WorkItem item;
  item.prompt = "The history of the city";
  item.max_tokens = 32;
  item.extra = {{"temperature", 0.8}, {"seed", 7}, {"speculation", {{"gamma", 4}}}};
  const json body = json::parse(chat_request_body(item, "tiny", {{"ignore_eos", true}, {"seed", 9}}));
  EXPECT_EQ(body, (json{{"model", "tiny"},
                        {"messages", {{{"role", "user"}, {"content", "The history of the city"}}}},
                        {"max_tokens", 32},
                        {"temperature", 0.8},
                        {"seed", 9},  // the override wins over the item's own
                        {"speculation", {{"gamma", 4}}},
                        {"ignore_eos", true}}));
  EXPECT_FALSE(body.contains("prompt"));
}

TEST(ChatRequestBody, HistoryIsSentInOrderAndModelLeftOutWhenEmpty) {
  const std::vector<ChatMessage> history = {
      {"system", "Be brief."}, {"user", "Hi"}, {"assistant", "Hello!"}, {"user", "Bye"}};
  const std::string text = chat_request_body(history, 5, nullptr, "", {{"speculation", false}});
  // Written in order: messages before max_tokens, as the completions body puts prompt first.
  EXPECT_LT(text.find("\"messages\""), text.find("\"max_tokens\""));
  const json body = json::parse(text);
  EXPECT_FALSE(body.contains("model"));
  ASSERT_EQ(body["messages"].size(), 4u);
  EXPECT_EQ(body["messages"][2], (json{{"role", "assistant"}, {"content", "Hello!"}}));
  EXPECT_EQ(body["messages"][3], (json{{"role", "user"}, {"content", "Bye"}}));
  EXPECT_EQ(body["max_tokens"], 5);
  EXPECT_EQ(body["speculation"], false);
}

TEST(ChatRequestBody, StreamingAsksForUsage) {
  const json body = json::parse(streaming_body(chat_request_body({{"user", "x"}}, 3, nullptr, "", nullptr)));
  EXPECT_EQ(body["stream"], true);
  EXPECT_EQ(body["stream_options"], (json{{"include_usage", true}}));
  EXPECT_EQ(body["messages"][0]["content"], "x");
}

TEST(ChatRequestBody, OverridesMustBeAnObject) {
  test_support::expect_invalid([] { chat_request_body({{"user", "x"}}, 3, nullptr, "", json::array()); },
                               "overrides must be a JSON object");
}

TEST(Api, NamesAndDefaultPaths) {
  EXPECT_EQ(parse_api("completions"), Api::completions);
  EXPECT_EQ(parse_api("chat"), Api::chat);
  test_support::expect_invalid([] { parse_api("chat-completions"); }, "--endpoint");
  EXPECT_EQ(parse_url("http://127.0.0.1:8080", default_path(Api::chat)).path, "/v1/chat/completions");
  EXPECT_EQ(parse_url("http://127.0.0.1:8080/", default_path(Api::chat)).path, "/v1/chat/completions");
  EXPECT_EQ(parse_url("http://127.0.0.1:8080", default_path(Api::completions)).path, "/v1/completions");
  // A path given wins over the endpoint's default.
  EXPECT_EQ(parse_url("http://h:1/openai/chat", default_path(Api::chat)).path, "/openai/chat");
}

}  // namespace
}  // namespace tandem::loadtest
