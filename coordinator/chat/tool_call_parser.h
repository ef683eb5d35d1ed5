// Tool calls in a model's output, in the two formats chat templates teach:
//
//   hermes       <tool_call>{"name": "f", "arguments": {...}}</tool_call>, any
//                number of them among other text (Qwen 2/2.5/3, Hermes)
//   llama3_json  {"name": "f", "parameters": {...}} as the whole message,
//                optionally after <|python_tag|> (Llama 3.1 / 3.2)
//
// A call that does not parse (bad JSON, no name, an unterminated tag) stays
// in the content as the model wrote it: the client then sees exactly what
// came out rather than losing it.
//
// ToolCallFilter does the same incrementally for a stream: text goes out as
// content as soon as it cannot be part of a call; from the first "<tool_call>"
// on it is held back until its closing tag, and then goes out as one call.
// parse_tool_calls() is the filter fed the whole text at once, so a streamed
// reply's pieces always add up to the whole reply's. Whitespace next to a
// call is dropped (the content of "text\n<tool_call>...</tool_call>" is "text").
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tandem::chat {

enum class ToolCallFormat { none, hermes, llama3_json };

// The format a chat template teaches: hermes when it mentions <tool_call>,
// llama3_json when it mentions <|python_tag|> or a "parameters" key, none
// otherwise.
ToolCallFormat tool_call_format_of(std::string_view template_source);

struct ToolCall {
  std::string name;
  std::string arguments;  // a JSON object as text, as OpenAI sends it
};

struct ParsedOutput {
  std::string content;
  std::vector<ToolCall> calls;
};

// What the filter lets out for one piece of input.
struct FilteredPiece {
  std::string content;
  std::vector<ToolCall> calls;
};

class ToolCallFilter {
 public:
  explicit ToolCallFilter(ToolCallFormat format) : format_(format) {}
  FilteredPiece push(std::string_view text);
  // The end of the output: whatever is still held back.
  FilteredPiece finish();
  bool found_calls() const { return found_calls_; }

 private:
  FilteredPiece drain(bool at_end);
  void emit_text(std::string_view text, FilteredPiece& out);

  ToolCallFormat format_;
  std::string held_;         // input not yet let out
  std::string spaces_;       // whitespace let out only if text follows
  bool found_calls_ = false;
  bool after_call_ = false;  // the last thing let out was a call
  bool started_ = false;     // llama3_json: something other than space came
  bool whole_message_ = false;  // llama3_json: the message may be a call
};

ParsedOutput parse_tool_calls(std::string_view text, ToolCallFormat format);

// One call's JSON ({"name", "arguments" | "parameters"}), or nullopt.
std::optional<ToolCall> parse_call_json(std::string_view json);

}  // namespace tandem::chat
