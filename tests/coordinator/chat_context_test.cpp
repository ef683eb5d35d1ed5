#include "coordinator/chat/chat_context.h"

#include <gtest/gtest.h>

#include "common/error.h"

namespace tandem::chat {
namespace {

ChatRequest chat_request(const std::string& body) {
  api::RequestLimits limits;
  limits.max_tokens_limit = 100;
  return parse_chat_request(body, limits);
}

TEST(ChatContext, HoldsTheRequestAndTokensInTheClientsKeyOrder) {
  const ChatRequest request = chat_request(R"({"messages": [{"role": "user", "content": "Hi", "b": 1, "a": 2}],
      "tools": [{"type": "function", "function": {"name": "f", "parameters": {"z": 1, "y": 2}}}],
      "chat_template_kwargs": {"enable_thinking": false}})");
  const OrderedJson context = chat_context(request, TemplateTokens{"<s>", "</s>"});
  EXPECT_EQ(context.dump(),
            R"({"enable_thinking":false,"messages":[{"role":"user","content":"Hi","b":1,"a":2}],)"
            R"("tools":[{"type":"function","function":{"name":"f","parameters":{"z":1,"y":2}}}],)"
            R"("add_generation_prompt":true,"bos_token":"<s>","eos_token":"</s>"})");
}

TEST(ChatContext, NoToolsMeansNoToolsVariable) {
  const OrderedJson context = chat_context(
      chat_request(R"({"messages": [{"role": "user", "content": "Hi"}], "add_generation_prompt": false})"), {});
  EXPECT_FALSE(context.contains("tools"));
  EXPECT_EQ(context["add_generation_prompt"], false);
  EXPECT_EQ(context["bos_token"], "");
  const OrderedJson none = chat_context(chat_request(R"({"messages": [{"role": "user", "content": "Hi"}],
      "tools": [{"type": "function", "function": {"name": "f"}}], "tool_choice": "none"})"), {});
  EXPECT_FALSE(none.contains("tools"));
}

TEST(ChatContext, BosAndEosComeAsStringsOrAddedTokenObjects) {
  const TemplateTokens strings = template_tokens(OrderedJson::parse(R"({"bos_token": "<s>", "eos_token": "</s>"})"));
  EXPECT_EQ(strings.bos_token, "<s>");
  EXPECT_EQ(strings.eos_token, "</s>");
  const TemplateTokens objects = template_tokens(OrderedJson::parse(
      R"({"bos_token": {"__type": "AddedToken", "content": "<|begin_of_text|>", "lstrip": false},
          "eos_token": {"content": "<|eot_id|>"}})"));
  EXPECT_EQ(objects.bos_token, "<|begin_of_text|>");
  EXPECT_EQ(objects.eos_token, "<|eot_id|>");
  const TemplateTokens absent = template_tokens(OrderedJson::parse(R"({"eos_token": null})"));
  EXPECT_EQ(absent.bos_token, "");
  EXPECT_EQ(absent.eos_token, "");
  EXPECT_THROW(template_tokens(OrderedJson::parse(R"({"bos_token": 3})")), Error);
  EXPECT_THROW(template_tokens(OrderedJson::parse(R"({"eos_token": {"text": "x"}})")), Error);
}

// The cases of transformers' continue_final_message, on literal text.
TEST(ContinueFinalMessage, CutsRightAfterTheFinalMessage) {
  EXPECT_EQ(cut_after_final_message("<|user|>\nHi<|end|>\n<|assistant|>\nHello<|end|>\n", "Hello"),
            "<|user|>\nHi<|end|>\n<|assistant|>\nHello");
  // The last occurrence is the final message's, even when an earlier one is the same text.
  EXPECT_EQ(cut_after_final_message("A: Hi\nB: Hi\n</s>", "Hi"), "A: Hi\nB: Hi");
}

TEST(ContinueFinalMessage, TrailingWhitespaceIsKeptOnlyWhereTheTemplateKeptIt) {
  EXPECT_EQ(cut_after_final_message("<a>Hello \n<end>", "Hello "), "<a>Hello ");
  // A template that strips content: the cut comes after the stripped text.
  EXPECT_EQ(cut_after_final_message("<a>Hello<end>", "Hello  "), "<a>Hello");
  EXPECT_EQ(cut_after_final_message("<a>  Hello<end>", "  Hello"), "<a>  Hello");
}

TEST(ContinueFinalMessage, AMessageTheTemplateChangedIsA400) {
  try {
    cut_after_final_message("<a>HELLO<end>", "Hello");
    FAIL() << "accepted";
  } catch (const api::ApiError& error) {
    EXPECT_EQ(error.status, 400);
    EXPECT_EQ(error.param, "continue_final_message");
  }
  EXPECT_EQ(cut_after_final_message("<a><end>", ""), "<a><end>");  // nothing to cut at
}

}  // namespace
}  // namespace tandem::chat
