#include "coordinator/chat/tool_call_parser.h"

#include <gtest/gtest.h>

namespace tandem::chat {
namespace {

TEST(ToolCallFormat, ChosenFromWhatTheTemplateTeaches) {
  EXPECT_EQ(tool_call_format_of("{{ '<tool_call>' }}"), ToolCallFormat::hermes);
  EXPECT_EQ(tool_call_format_of("{{- '<|python_tag|>' }}"), ToolCallFormat::llama3_json);
  EXPECT_EQ(tool_call_format_of(R"(Respond {"name": function name, "parameters": dictionary})"),
            ToolCallFormat::llama3_json);
  EXPECT_EQ(tool_call_format_of("{% for m in messages %}{{ m.content }}{% endfor %}"), ToolCallFormat::none);
}

TEST(HermesToolCalls, OneCallIsTakenOutOfTheContent) {
  const ParsedOutput out = parse_tool_calls(
      R"(<tool_call>{"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}</tool_call>)",
      ToolCallFormat::hermes);
  ASSERT_EQ(out.calls.size(), 1u);
  EXPECT_EQ(out.calls[0].name, "get_weather");
  EXPECT_EQ(out.calls[0].arguments, R"({"city":"Paris","days":2})");  // the model's key order
  EXPECT_EQ(out.content, "");
}

TEST(HermesToolCalls, SeveralCallsAndTextAround) {
  const ParsedOutput out = parse_tool_calls(
      "Let me check.\n<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>\n"
      "<tool_call>{\"name\": \"b\", \"arguments\": {\"x\": [1, 2]}}</tool_call>\nDone.",
      ToolCallFormat::hermes);
  ASSERT_EQ(out.calls.size(), 2u);
  EXPECT_EQ(out.calls[0].name, "a");
  EXPECT_EQ(out.calls[0].arguments, "{}");
  EXPECT_EQ(out.calls[1].name, "b");
  EXPECT_EQ(out.calls[1].arguments, R"({"x":[1,2]})");
  EXPECT_EQ(out.content, "Let me check.Done.");
}

TEST(HermesToolCalls, ArgumentsAsJsonTextAndMissingArguments) {
  ParsedOutput out = parse_tool_calls(R"(<tool_call>{"name": "f", "arguments": "{\"a\": 1}"}</tool_call>)",
                                      ToolCallFormat::hermes);
  ASSERT_EQ(out.calls.size(), 1u);
  EXPECT_EQ(out.calls[0].arguments, R"({"a": 1})");
  out = parse_tool_calls(R"(<tool_call>{"name": "f"}</tool_call>)", ToolCallFormat::hermes);
  ASSERT_EQ(out.calls.size(), 1u);
  EXPECT_EQ(out.calls[0].arguments, "{}");
}

TEST(HermesToolCalls, InvalidCallsStayContent) {
  for (const std::string& text : {
           std::string(R"(<tool_call>{"name": "f", "arguments": {"a": </tool_call>)"),  // bad JSON
           std::string(R"(<tool_call>{"arguments": {}}</tool_call>)"),                 // no name
           std::string(R"(<tool_call>["f"]</tool_call>)"),                             // not an object
           std::string(R"(<tool_call>{"name": "f", "arguments": 3}</tool_call>)"),     // bad arguments
           std::string(R"(Sure. <tool_call>{"name": "f", "arguments": {}})"),          // unterminated
       }) {
    const ParsedOutput out = parse_tool_calls(text, ToolCallFormat::hermes);
    EXPECT_TRUE(out.calls.empty()) << text;
    EXPECT_EQ(out.content, text);
  }
}

TEST(HermesToolCalls, AValidCallBesideAnInvalidOne) {
  const ParsedOutput out = parse_tool_calls(
      R"(<tool_call>oops</tool_call> <tool_call>{"name": "g", "arguments": {}}</tool_call>)",
      ToolCallFormat::hermes);
  ASSERT_EQ(out.calls.size(), 1u);
  EXPECT_EQ(out.calls[0].name, "g");
  EXPECT_EQ(out.content, "<tool_call>oops</tool_call>");
}

TEST(HermesToolCalls, PlainTextIsUntouched) {
  const std::string text = "  Hello,\n world <tool_ not a tag \n\n";
  EXPECT_EQ(parse_tool_calls(text, ToolCallFormat::hermes).content, text);
  EXPECT_EQ(parse_tool_calls(text, ToolCallFormat::none).content, text);
  EXPECT_TRUE(parse_tool_calls(R"(<tool_call>{"name": "f"}</tool_call>)", ToolCallFormat::none).calls.empty());
}

TEST(HermesToolCalls, StreamedPiecesAddUpToTheWholeAndHoldBackTheCall) {
  const std::string text =
      "Checking <tool_call>{\"name\": \"f\", \"arguments\": {\"q\": \"x\"}}</tool_call> then <tool_ok";
  ToolCallFilter filter(ToolCallFormat::hermes);
  std::string content;
  std::vector<ToolCall> calls;
  size_t calls_when_closed = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    FilteredPiece piece = filter.push(text.substr(i, 1));
    content += piece.content;
    // Nothing of the call's text is ever let out as content.
    EXPECT_EQ(content.find("<tool_call"), std::string::npos) << content;
    EXPECT_EQ(content.find("\"q\""), std::string::npos) << content;
    for (ToolCall& call : piece.calls) calls.push_back(std::move(call));
    if (i + 1 == text.find("</tool_call>") + 12) calls_when_closed = calls.size();
  }
  EXPECT_EQ(calls_when_closed, 1u);  // sent as soon as the closing tag is complete
  FilteredPiece last = filter.finish();
  content += last.content;
  EXPECT_TRUE(last.calls.empty());
  const ParsedOutput whole = parse_tool_calls(text, ToolCallFormat::hermes);
  EXPECT_EQ(content, whole.content);
  EXPECT_EQ(content, "Checkingthen <tool_ok");
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].arguments, R"({"q":"x"})");
}

TEST(Llama3JsonToolCalls, TheWholeMessageIsTheCall) {
  ParsedOutput out = parse_tool_calls(R"( {"name": "get_weather", "parameters": {"city": "Oslo"}})",
                                      ToolCallFormat::llama3_json);
  ASSERT_EQ(out.calls.size(), 1u);
  EXPECT_EQ(out.calls[0].name, "get_weather");
  EXPECT_EQ(out.calls[0].arguments, R"({"city":"Oslo"})");
  EXPECT_EQ(out.content, "");
  out = parse_tool_calls(R"(<|python_tag|>{"name": "f", "parameters": {}})", ToolCallFormat::llama3_json);
  ASSERT_EQ(out.calls.size(), 1u);
  EXPECT_EQ(out.calls[0].name, "f");
}

TEST(Llama3JsonToolCalls, AnythingElseStaysContent) {
  for (const std::string& text : {std::string("The weather is fine."),
                                 std::string(R"({"name": "f", "parameters": {)"),
                                 std::string(R"(Call: {"name": "f", "parameters": {}})"),
                                 std::string(R"({"title": "not a call"})")}) {
    const ParsedOutput out = parse_tool_calls(text, ToolCallFormat::llama3_json);
    EXPECT_TRUE(out.calls.empty()) << text;
    EXPECT_EQ(out.content, text);
  }
}

TEST(Llama3JsonToolCalls, StreamedTextIsHeldOnlyWhenItMayBeACall) {
  ToolCallFilter prose(ToolCallFormat::llama3_json);
  EXPECT_EQ(prose.push("  ").content, "");
  EXPECT_EQ(prose.push("Hi").content, "  Hi");  // cannot be a call: let out at once
  EXPECT_EQ(prose.push(" there").content, " there");
  ToolCallFilter call(ToolCallFormat::llama3_json);
  EXPECT_EQ(call.push(R"({"name": "f", )").content, "");
  EXPECT_EQ(call.push(R"("parameters": {}})").content, "");
  const FilteredPiece end = call.finish();
  EXPECT_EQ(end.content, "");
  ASSERT_EQ(end.calls.size(), 1u);
  EXPECT_TRUE(call.found_calls());
}

}  // namespace
}  // namespace tandem::chat
