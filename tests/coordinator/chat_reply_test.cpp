#include "coordinator/chat/chat_reply.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace tandem::chat {
namespace {

using nlohmann::json;

const ChatHeader kHeader{"chatcmpl-test", 1700000000, "tandem"};

ReplyEnd stop_end() {
  ReplyEnd end;
  end.finish_reason = "stop";
  end.usage = {7, 5, 3};
  end.speculation.drafter = "model";
  end.speculation.gamma_policy = "4";
  return end;
}

const std::string kCallOutput =
    "Let me look.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";

TEST(ChatReply, PlainTextIsTheMessageContent) {
  const json reply = json::parse(chat_reply_json(kHeader, "Hello there.", ToolCallFormat::hermes, stop_end()));
  EXPECT_EQ(reply["object"], "chat.completion");
  EXPECT_EQ(reply["id"], "chatcmpl-test");
  EXPECT_EQ(reply["created"], 1700000000);
  EXPECT_EQ(reply["choices"][0]["message"], json({{"role", "assistant"}, {"content", "Hello there."}}));
  EXPECT_EQ(reply["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(reply["usage"], json({{"prompt_tokens", 7},
                                  {"completion_tokens", 5},
                                  {"total_tokens", 12},
                                  {"prompt_tokens_details", {{"cached_tokens", 3}}}}));
  EXPECT_EQ(reply["speculation"]["gamma_policy"], "4");
}

TEST(ChatReply, ToolCallsBecomeMessageToolCalls) {
  const json reply = json::parse(chat_reply_json(kHeader, kCallOutput, ToolCallFormat::hermes, stop_end()));
  const json& message = reply["choices"][0]["message"];
  EXPECT_EQ(message["content"], "Let me look.");
  ASSERT_EQ(message["tool_calls"].size(), 1u);
  const json& call = message["tool_calls"][0];
  EXPECT_EQ(call["id"].get<std::string>().rfind("call_", 0), 0u);
  EXPECT_EQ(call["id"].get<std::string>().size(), 5u + 24u);
  EXPECT_EQ(call["type"], "function");
  EXPECT_EQ(call["function"]["name"], "get_weather");
  EXPECT_EQ(call["function"]["arguments"], R"({"city":"Paris"})");  // a JSON string, as OpenAI's
  EXPECT_EQ(reply["choices"][0]["finish_reason"], "tool_calls");
}

TEST(ChatReply, ACallAloneLeavesContentNull) {
  const json reply = json::parse(chat_reply_json(
      kHeader, R"(<tool_call>{"name": "f", "arguments": {}}</tool_call>)", ToolCallFormat::hermes, stop_end()));
  EXPECT_TRUE(reply["choices"][0]["message"]["content"].is_null());
  EXPECT_EQ(reply["choices"][0]["message"]["tool_calls"].size(), 1u);
}

TEST(ChatReply, WithoutToolsTheCallTextIsContent) {
  const json reply = json::parse(chat_reply_json(kHeader, kCallOutput, ToolCallFormat::none, stop_end()));
  EXPECT_EQ(reply["choices"][0]["message"]["content"], kCallOutput);
  EXPECT_FALSE(reply["choices"][0]["message"].contains("tool_calls"));
  EXPECT_EQ(reply["choices"][0]["finish_reason"], "stop");
}

std::vector<json> parsed(const std::vector<std::string>& payloads) {
  std::vector<json> out;
  for (const std::string& payload : payloads) out.push_back(json::parse(payload));
  return out;
}

TEST(ChatChunker, StreamsRoleContentCallsFinishAndUsage) {
  ChatChunker chunker(kHeader, ToolCallFormat::hermes, /*include_usage=*/true);
  std::vector<json> chunks = parsed(chunker.opening());
  for (size_t i = 0; i < kCallOutput.size(); i += 3) {
    for (json& chunk : parsed(chunker.text(kCallOutput.substr(i, 3)))) chunks.push_back(std::move(chunk));
  }
  for (json& chunk : parsed(chunker.end(stop_end()))) chunks.push_back(std::move(chunk));

  ASSERT_GE(chunks.size(), 5u);
  EXPECT_EQ(chunks.front()["choices"][0]["delta"], json({{"role", "assistant"}, {"content", ""}}));
  std::string content;
  std::vector<json> calls;
  for (size_t i = 0; i < chunks.size(); ++i) {
    EXPECT_EQ(chunks[i]["object"], "chat.completion.chunk");
    EXPECT_EQ(chunks[i]["id"], "chatcmpl-test");
    if (i + 1 == chunks.size()) break;  // the usage chunk
    EXPECT_TRUE(chunks[i]["usage"].is_null());
    const json& delta = chunks[i]["choices"][0]["delta"];
    if (i > 0 && delta.contains("content")) content += delta["content"].get<std::string>();
    if (delta.contains("tool_calls")) calls.push_back(delta["tool_calls"][0]);
  }
  EXPECT_EQ(content, "Let me look.");  // no call text streamed as content
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0]["index"], 0);
  EXPECT_EQ(calls[0]["type"], "function");
  EXPECT_EQ(calls[0]["function"]["name"], "get_weather");
  EXPECT_EQ(calls[0]["function"]["arguments"], R"({"city":"Paris"})");
  const json& finish = chunks[chunks.size() - 2]["choices"][0];
  EXPECT_EQ(finish["delta"], json::object());
  EXPECT_EQ(finish["finish_reason"], "tool_calls");
  EXPECT_EQ(chunks.back()["choices"], json::array());
  EXPECT_EQ(chunks.back()["usage"]["total_tokens"], 12);
  EXPECT_EQ(chunks.back()["usage"]["prompt_tokens_details"]["cached_tokens"], 3);
}

TEST(ChatChunker, SeveralCallsGetIncreasingIndexes) {
  ChatChunker chunker(kHeader, ToolCallFormat::hermes, false);
  std::vector<json> chunks = parsed(chunker.text(
      R"(<tool_call>{"name": "a", "arguments": {}}</tool_call><tool_call>{"name": "b", "arguments": {}}</tool_call>)"));
  ASSERT_EQ(chunks.size(), 2u);
  EXPECT_EQ(chunks[0]["choices"][0]["delta"]["tool_calls"][0]["index"], 0);
  EXPECT_EQ(chunks[1]["choices"][0]["delta"]["tool_calls"][0]["index"], 1);
  EXPECT_FALSE(chunks[0].contains("usage"));
  const std::vector<json> end = parsed(chunker.end(stop_end()));
  ASSERT_EQ(end.size(), 1u);
  EXPECT_EQ(end[0]["choices"][0]["finish_reason"], "tool_calls");
}

TEST(ChatChunker, PlainStreamKeepsTheEnginesFinishReason) {
  ChatChunker chunker(kHeader, ToolCallFormat::none, false);
  EXPECT_EQ(parsed(chunker.text("abc"))[0]["choices"][0]["delta"], json({{"content", "abc"}}));
  ReplyEnd end = stop_end();
  end.finish_reason = "length";
  EXPECT_EQ(parsed(chunker.end(end))[0]["choices"][0]["finish_reason"], "length");
}

// n > 1: each choice parses its own tool calls and carries its own index,
// and finish() leaves the usage chunk to the route (one for all choices).
TEST(ChatChunker, EachChoiceOfSeveralHasItsIndexAndOwnCalls) {
  const json whole = chat_reply_choice(kCallOutput, ToolCallFormat::hermes, "stop", 2);
  EXPECT_EQ(whole["index"], 2);
  EXPECT_EQ(whole["finish_reason"], "tool_calls");
  EXPECT_EQ(whole["message"]["tool_calls"][0]["function"]["name"], "get_weather");
  const json plain = chat_reply_choice("Just text.", ToolCallFormat::hermes, "length", 1);
  EXPECT_EQ(plain["index"], 1);
  EXPECT_EQ(plain["message"]["content"], "Just text.");
  EXPECT_EQ(plain["finish_reason"], "length");

  ChatChunker chunker(kHeader, ToolCallFormat::hermes, /*include_usage=*/true, 3);
  EXPECT_EQ(parsed(chunker.opening())[0]["choices"][0]["index"], 3);
  std::vector<json> chunks = parsed(chunker.text(kCallOutput));
  const std::vector<json> finish = parsed(chunker.finish(stop_end()));
  chunks.insert(chunks.end(), finish.begin(), finish.end());
  for (const json& chunk : chunks) {
    ASSERT_EQ(chunk["choices"].size(), 1u) << chunk.dump();  // no usage chunk from finish()
    EXPECT_EQ(chunk["choices"][0]["index"], 3);
  }
  EXPECT_EQ(chunks.back()["choices"][0]["finish_reason"], "tool_calls");
}

}  // namespace
}  // namespace tandem::chat

namespace tandem::chat {
namespace {

api::LogprobEntry entry_of(const std::string& token, double logprob) {
  api::LogprobEntry entry;
  entry.token = token;
  entry.logprob = logprob;
  return entry;
}

TEST(ChatChunker, HeldBackTextCarriesItsLogprobsToTheChunkThatLetsItOut) {
  // "Hi " goes out at once; "<tool_call>..." is held until the call is
  // complete, so its tokens' entries ride on the tool_calls chunk.
  ChatChunker chunker(kHeader, ToolCallFormat::hermes, /*include_usage=*/false, /*index=*/0,
                      /*logprobs=*/true);
  std::vector<json> chunks;
  const auto add = [&](const std::vector<std::string>& events) {
    for (const std::string& event : events) chunks.push_back(json::parse(event));
  };
  add(chunker.opening());
  add(chunker.text("Hi ", {entry_of("Hi", -0.1), entry_of(" ", -0.2)}));
  add(chunker.text("<tool_call>\n{\"name\": \"f\", ", {entry_of("<tool_call>", -0.3)}));
  add(chunker.text("\"arguments\": {}}\n</tool_call>", {entry_of("</tool_call>", -0.4)}));
  add(chunker.end(stop_end()));
  std::vector<std::string> tokens;
  for (const json& chunk : chunks) {
    const json& logprobs = chunk["choices"][0]["logprobs"];
    ASSERT_TRUE(logprobs.is_object()) << chunk;
    EXPECT_TRUE(logprobs["refusal"].is_null());
    for (const json& entry : logprobs["content"]) tokens.push_back(entry["token"]);
  }
  EXPECT_EQ(tokens, (std::vector<std::string>{"Hi", " ", "<tool_call>", "</tool_call>"}));
  // The content chunk carries the entries of its text; the call chunk the rest.
  ASSERT_GE(chunks.size(), 4u);
  EXPECT_EQ(chunks[1]["choices"][0]["delta"]["content"], "Hi");
  EXPECT_EQ(chunks[1]["choices"][0]["logprobs"]["content"].size(), 2u);
}

TEST(ChatChunker, WithoutLogprobsChunksSayNull) {
  ChatChunker chunker(kHeader, ToolCallFormat::none, false);
  for (const std::string& event : chunker.text("Hello", {})) {
    EXPECT_TRUE(json::parse(event)["choices"][0]["logprobs"].is_null());
  }
}

TEST(ChatReply, WholeReplyCarriesTheGivenLogprobs) {
  const api::OrderedJson logprobs = api::chat_logprobs_json({entry_of("Hello", -0.5)});
  const json reply = json::parse(chat_reply_json(kHeader, "Hello", ToolCallFormat::none, stop_end(), logprobs));
  EXPECT_EQ(reply["choices"][0]["logprobs"]["content"][0]["token"], "Hello");
  EXPECT_EQ(reply["choices"][0]["logprobs"]["content"][0]["bytes"], json({72, 101, 108, 108, 111}));
}

}  // namespace
}  // namespace tandem::chat
