#include "coordinator/chat/chat_request.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

namespace tandem::chat {
namespace {

using nlohmann::json;

api::RequestLimits test_limits() {
  api::RequestLimits limits;
  limits.default_max_tokens = 16;
  limits.default_temperature = 0.8;
  limits.max_tokens_limit = 512;
  limits.served_model_name = "tandem-tiny";
  limits.vocab_size = 1000;
  return limits;
}

const char* kHello = R"("messages": [{"role": "user", "content": "Hi"}])";

ChatRequest parse(const std::string& body) { return parse_chat_request(body, test_limits()); }

// The ApiError a body is refused with; fails the test if it is accepted.
api::ApiError rejection(const std::string& body) {
  try {
    parse(body);
  } catch (const api::ApiError& error) {
    return error;
  }
  ADD_FAILURE() << "accepted a body that must be refused: " << body;
  return api::internal("not refused");
}

void expect_refused(const std::string& body, const std::string& param, const std::string& words = "") {
  const api::ApiError error = rejection(body);
  EXPECT_EQ(error.status, 400) << body;
  EXPECT_EQ(error.type, "invalid_request_error");
  EXPECT_EQ(error.param.value_or("<none>"), param) << body << " -> " << error.message;
  if (!words.empty()) {
    EXPECT_NE(error.message.find(words), std::string::npos) << error.message;
  }
}

TEST(ChatRequest, MinimalRequestTakesTheDefaults) {
  const ChatRequest request = parse(std::string("{") + kHello + "}");
  EXPECT_EQ(request.messages.dump(), R"([{"role":"user","content":"Hi"}])");
  EXPECT_TRUE(request.add_generation_prompt);
  EXPECT_FALSE(request.continue_final_message);
  EXPECT_FALSE(request.max_tokens_given);
  EXPECT_TRUE(request.tools.is_null());
  EXPECT_EQ(request.template_kwargs, OrderedJson::object());
  EXPECT_EQ(request.sampling.model, "tandem-tiny");
  EXPECT_DOUBLE_EQ(request.sampling.temperature, 0.8);
  EXPECT_FALSE(request.sampling.stream);
}

TEST(ChatRequest, SharedFieldsAreReadAsCompletionsReadThem) {
  const ChatRequest request = parse(std::string("{") + kHello + R"(, "model": "tandem-tiny",
      "max_tokens": 9, "temperature": 0, "top_p": 0.5, "top_k": 3, "seed": -1, "stop": ["a", "b"],
      "stream": true, "stream_options": {"include_usage": true}, "n": 1, "user": "u",
      "presence_penalty": 0, "frequency_penalty": 0, "logit_bias": {}, "ignore_eos": true,
      "speculation": {"gamma": 3, "drafter": "ngram", "pipeline": false, "coupling": "gumbel"},
      "cache_salt": "tenant-a"})");
  const api::CompletionRequest& s = request.sampling;
  EXPECT_EQ(s.max_tokens, 9);
  EXPECT_TRUE(request.max_tokens_given);
  EXPECT_EQ(s.temperature, 0);
  EXPECT_EQ(s.top_p, 0.5);
  EXPECT_EQ(s.top_k, 3);
  EXPECT_EQ(s.seed, UINT64_MAX);
  EXPECT_EQ(s.stop, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(s.stream);
  EXPECT_TRUE(s.include_usage);
  EXPECT_TRUE(s.ignore_eos);
  ASSERT_TRUE(s.speculation.gamma.has_value());
  EXPECT_EQ(s.speculation.gamma->gamma, 3);
  EXPECT_EQ(s.speculation.drafter, api::DrafterChoice::ngram);
  EXPECT_FALSE(s.speculation.pipeline);
  EXPECT_EQ(s.speculation.coupling, CouplingSetting::gumbel);
  EXPECT_EQ(s.cache_salt, "tenant-a");
}

TEST(ChatRequest, MaxCompletionTokensWinsOverMaxTokens) {
  EXPECT_EQ(parse(std::string("{") + kHello + R"(, "max_completion_tokens": 7})").sampling.max_tokens, 7);
  const ChatRequest both =
      parse(std::string("{") + kHello + R"(, "max_completion_tokens": 7, "max_tokens": 20})");
  EXPECT_EQ(both.sampling.max_tokens, 7);
  EXPECT_EQ(both.max_tokens_field, "max_completion_tokens");
  EXPECT_EQ(parse(std::string("{") + kHello + R"(, "max_tokens": 20})").max_tokens_field, "max_tokens");
  EXPECT_TRUE(both.max_tokens_given);
  expect_refused(std::string("{") + kHello + R"(, "max_completion_tokens": 0})", "max_completion_tokens");
  expect_refused(std::string("{") + kHello + R"(, "max_completion_tokens": 513})", "max_completion_tokens");
  expect_refused(std::string("{") + kHello + R"(, "max_completion_tokens": "5"})", "max_completion_tokens");
}

TEST(ChatRequest, SharedFieldsAreRefusedWithTheirParam) {
  const std::string head = std::string("{") + kHello + ", ";
  expect_refused(head + R"("temperature": 3})", "temperature");
  expect_refused(head + R"("top_p": 0})", "top_p");
  expect_refused(head + R"("max_tokens": 0})", "max_tokens");
  expect_refused(head + R"("n": 17})", "n");
  expect_refused(head + R"("n": 0})", "n");
  expect_refused(head + R"("stop": [""]})", "stop");
  expect_refused(head + R"("seed": "x"})", "seed");
  expect_refused(head + R"("speculation": {"gamma": 99}})", "speculation.gamma");
  expect_refused(head + R"("speculation": {"coupling": "coupled"}})", "speculation.coupling");
  expect_refused(head + R"("stream_options": {"include_usage": true}})", "stream_options");
  expect_refused(head + R"("presence_penalty": 3})", "presence_penalty");
  expect_refused(head + R"("repetition_penalty": 0})", "repetition_penalty");
  expect_refused(head + R"("logit_bias": {"x": 1}})", "logit_bias");
  expect_refused(head + R"("min_p": 1.5})", "min_p");
  expect_refused(head + R"("min_tokens": -1})", "min_tokens");
  expect_refused(head + R"("stop_token_ids": [5000]})", "stop_token_ids");
  expect_refused(head + R"("cache_salt": 7})", "cache_salt");
  expect_refused(head + R"("prompt": "x"})", "prompt", "Unrecognized request argument");
  expect_refused(head + R"("echo": true})", "echo", "Unrecognized request argument");
  expect_refused(head + R"("nonsense": 1})", "nonsense", "Unrecognized request argument");
  expect_refused(head + R"("logprobs": "yes"})", "logprobs");
  expect_refused(head + R"("top_logprobs": 2})", "top_logprobs", "logprobs: true");
  expect_refused(head + R"("logprobs": false, "top_logprobs": 2})", "top_logprobs", "logprobs: true");
  expect_refused(head + R"("logprobs": true, "top_logprobs": 21})", "top_logprobs", "[0, 20]");
  expect_refused(head + R"("logprobs": true, "top_logprobs": -1})", "top_logprobs", "[0, 20]");
  expect_refused(head + R"("response_format": {"type": "json_object"}})", "response_format");
  EXPECT_EQ(rejection(head + R"("model": "gpt-4"})").status, 404);
  EXPECT_NO_THROW(parse(head + R"("logprobs": false, "parallel_tool_calls": true})"));
}

TEST(ChatRequest, LogprobsTrueAsksForTopLogprobsAlternatives) {
  const std::string head = std::string("{") + kHello + ", ";
  EXPECT_EQ(parse(head + R"("logprobs": true})").sampling.logprobs, 0);
  EXPECT_EQ(parse(head + R"("logprobs": true, "top_logprobs": 20})").sampling.logprobs, 20);
  EXPECT_EQ(parse(head + R"("top_logprobs": 3, "logprobs": true})").sampling.logprobs, 3);
  EXPECT_EQ(parse(head + R"("logprobs": false})").sampling.logprobs, -1);
  EXPECT_EQ(parse(head + R"("logprobs": null, "top_logprobs": null})").sampling.logprobs, -1);
  EXPECT_EQ(parse(std::string("{") + kHello + "}").sampling.logprobs, -1);
}

TEST(ChatRequest, MessagesAreRequiredAndChecked) {
  expect_refused("{}", "messages", "Missing required parameter");
  expect_refused(R"({"messages": null})", "messages", "Missing required parameter");
  expect_refused(R"({"messages": []})", "messages");
  expect_refused(R"({"messages": "Hi"})", "messages");
  expect_refused(R"({"messages": [1]})", "messages[0]");
  expect_refused(R"({"messages": [{"content": "Hi"}]})", "messages[0].role");
  expect_refused(R"({"messages": [{"role": "user", "content": "a"}, {"role": "robot", "content": "Hi"}]})",
                 "messages[1].role", "robot");
  expect_refused(R"({"messages": [{"role": 3, "content": "Hi"}]})", "messages[0].role");
  expect_refused(R"({"messages": [{"role": "user"}]})", "messages[0].content");
  expect_refused(R"({"messages": [{"role": "user", "content": 5}]})", "messages[0].content");
  expect_refused(R"({"messages": [{"role": "tool", "content": "42"}]})", "messages[0].tool_call_id");
  expect_refused(R"({"messages": [{"role": "user", "content": "x", "tool_calls": []}]})",
                 "messages[0].tool_calls");
  expect_refused("[1, 2]", "<none>", "JSON object");
  expect_refused("{\"messages\": ", "<none>", "could not parse");
}

TEST(ChatRequest, ContentPartsOtherThanTextAreRefusedByTheirPath) {
  expect_refused(R"({"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"},
      {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]})",
                 "messages[2].content[0].type", "image_url");
  expect_refused(R"({"messages": [{"role": "user", "content": [{"type": "text", "text": "a"}, {"text": "b"}]}]})",
                 "messages[0].content[1].type");
  expect_refused(R"({"messages": [{"role": "user", "content": [{"type": "text"}]}]})",
                 "messages[0].content[0].text");
  expect_refused(R"({"messages": [{"role": "user", "content": [{"type": "text", "text": 1}]}]})",
                 "messages[0].content[0].text");
  expect_refused(R"({"messages": [{"role": "user", "content": ["a"]}]})", "messages[0].content[0]");
}

TEST(ChatRequest, TextPartsAreJoinedAndStringsStayStrings) {
  const ChatRequest request = parse(R"({"messages": [
      {"role": "user", "content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]},
      {"role": "assistant", "content": "three", "name": "bot"}]})");
  EXPECT_EQ(request.messages[0]["content"], "one\ntwo");
  EXPECT_EQ(request.messages[1].dump(), R"({"role":"assistant","content":"three","name":"bot"})");
}

TEST(ChatRequest, MessagesKeepTheClientsKeyOrder) {
  const ChatRequest request = parse(
      R"({"messages": [{"content": "Hi", "role": "user", "zeta": 1, "alpha": {"y": 1, "b": 2}}]})");
  EXPECT_EQ(request.messages.dump(), R"([{"content":"Hi","role":"user","zeta":1,"alpha":{"y":1,"b":2}}])");
}

TEST(ChatRequest, AssistantToolCallsAndToolResults) {
  const ChatRequest request = parse(R"({"messages": [
      {"role": "user", "content": "weather?"},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
          "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\", \"unit\": \"c\"}"}}]},
      {"role": "tool", "tool_call_id": "call_1", "content": "20"}]})");
  // JSON-text arguments reach the template as the object they hold, in order.
  EXPECT_EQ(request.messages[1]["tool_calls"][0]["function"]["arguments"].dump(),
            R"({"city":"Paris","unit":"c"})");
  EXPECT_TRUE(request.messages[1]["content"].is_null());
  // Calls without arguments stay without them (nothing is added).
  const ChatRequest bare = parse(R"({"messages": [{"role": "assistant", "tool_calls": [{"function": {"name": "f"}}]}]})");
  EXPECT_EQ(bare.messages.dump(), R"([{"role":"assistant","tool_calls":[{"function":{"name":"f"}}]}])");
  expect_refused(R"({"messages": [{"role": "assistant", "tool_calls": [{"type": "function"}]}]})",
                 "messages[0].tool_calls[0].function");
  expect_refused(R"({"messages": [{"role": "assistant", "tool_calls": [{"function": {}}]}]})",
                 "messages[0].tool_calls[0].function.name");
  expect_refused(R"({"messages": [{"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": 3}}]}]})",
                 "messages[0].tool_calls[0].function.arguments");
  expect_refused(R"({"messages": [{"role": "assistant", "content": null}]})", "messages[0].content");
}

TEST(ChatRequest, ToolsAndToolChoice) {
  const std::string tools =
      R"("tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}])";
  const ChatRequest with_tools = parse(std::string("{") + kHello + ", " + tools + "}");
  ASSERT_TRUE(with_tools.tools.is_array());
  EXPECT_EQ(with_tools.tools[0]["function"]["parameters"].dump(), R"({"type":"object","properties":{}})");
  EXPECT_TRUE(parse(std::string("{") + kHello + ", " + tools + R"(, "tool_choice": "none"})").tools.is_null());
  EXPECT_TRUE(parse(std::string("{") + kHello + ", " + tools + R"(, "tool_choice": "auto"})").tools.is_array());
  EXPECT_TRUE(parse(std::string("{") + kHello + R"(, "tools": []})").tools.is_null());
  const std::string head = std::string("{") + kHello + ", ";
  expect_refused(head + tools + R"(, "tool_choice": "required"})", "tool_choice", "required");
  expect_refused(head + tools + R"(, "tool_choice": {"type": "function", "function": {"name": "f"}}})", "tool_choice");
  expect_refused(head + tools + R"(, "tool_choice": "sometimes"})", "tool_choice");
  expect_refused(head + R"("tools": {}})", "tools");
  expect_refused(head + R"("tools": [{"type": "retrieval"}]})", "tools[0].type");
  expect_refused(head + R"("tools": [{"type": "function"}]})", "tools[0].function");
  expect_refused(head + R"("tools": [{"type": "function", "function": {"description": "d"}}]})", "tools[0].function.name");
  expect_refused(head + R"("tools": [{"type": "function", "function": {"name": "f", "parameters": []}}]})",
                 "tools[0].function.parameters");
  expect_refused(head + R"("parallel_tool_calls": 1})", "parallel_tool_calls");
}

TEST(ChatRequest, TemplateKwargsAreAnObjectKeptInOrder) {
  const ChatRequest request =
      parse(std::string("{") + kHello + R"(, "chat_template_kwargs": {"enable_thinking": false, "a": [1]}})");
  EXPECT_EQ(request.template_kwargs.dump(), R"({"enable_thinking":false,"a":[1]})");
  const std::string head = std::string("{") + kHello + ", ";
  expect_refused(head + R"("chat_template_kwargs": [1]})", "chat_template_kwargs");
  expect_refused(head + R"("chat_template_kwargs": {"messages": []}})", "chat_template_kwargs.messages");
  expect_refused(head + R"("chat_template_kwargs": {"add_generation_prompt": false}})",
                 "chat_template_kwargs.add_generation_prompt");
}

TEST(ChatRequest, GenerationPromptAndContinueFinalMessage) {
  const std::string open = R"({"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hel"}])";
  EXPECT_FALSE(parse(std::string("{") + kHello + R"(, "add_generation_prompt": false})").add_generation_prompt);
  const ChatRequest continued = parse(open + R"(, "continue_final_message": true})");
  EXPECT_TRUE(continued.continue_final_message);
  EXPECT_FALSE(continued.add_generation_prompt);  // defaults to false with it
  EXPECT_NO_THROW(parse(open + R"(, "continue_final_message": true, "add_generation_prompt": false})"));
  expect_refused(open + R"(, "continue_final_message": true, "add_generation_prompt": true})",
                 "continue_final_message", "add_generation_prompt");
  expect_refused(std::string("{") + kHello + R"(, "continue_final_message": true})", "continue_final_message",
                 "assistant");
  expect_refused(std::string("{") + kHello + R"(, "continue_final_message": 1})", "continue_final_message");
  expect_refused(std::string("{") + kHello + R"(, "add_generation_prompt": "yes"})", "add_generation_prompt");
}

}  // namespace
}  // namespace tandem::chat
