// Responses of /v1/chat/completions as JSON text: OpenAI's chat.completion
// object and its chat.completion.chunk stream, with the same "speculation"
// object beside "usage" that completions carry. Thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "coordinator/api/completion_response.h"
#include "coordinator/chat/tool_call_parser.h"

namespace tandem::chat {

// The fields every chat object starts with.
struct ChatHeader {
  std::string id;  // "chatcmpl-..."
  int64_t created_unix = 0;
  std::string model;
};

// "call_" followed by 24 random letters and digits.
std::string new_tool_call_id();

// A call as OpenAI sends it: {"id", "type": "function", "function": {"name",
// "arguments"}}, with "index" first when streamed.
api::OrderedJson tool_call_object(const ToolCall& call, const std::string& id,
                                  std::optional<int> index = std::nullopt);

// {"id", "object": "chat.completion", "created", "model", "choices": [{"index": 0,
// "message": {"role": "assistant", "content": string|null[, "tool_calls"]},
// "logprobs", "finish_reason"}], "usage", "speculation"}. `content` is
// null when absent (a reply of tool calls only). `logprobs`: the choice's
// (api/token_logprobs.h), null when not asked for.
std::string chat_completion_json(const ChatHeader& header, const std::optional<std::string>& content,
                                 const api::OrderedJson& tool_calls, std::string_view finish_reason,
                                 const api::Usage& usage, const api::SpeculationReport& speculation,
                                 const api::OrderedJson& logprobs = nullptr);

// One choice of a chat.completion: {"index", "message", "logprobs", "finish_reason"}.
api::OrderedJson chat_choice_object(int index, const std::optional<std::string>& content,
                                    const api::OrderedJson& tool_calls, std::string_view finish_reason,
                                    const api::OrderedJson& logprobs = nullptr);
// The chat.completion with these choices (chat_choice_object's).
std::string chat_completion_json(const ChatHeader& header, api::OrderedJson choices,
                                 const api::Usage& usage, const api::SpeculationReport& speculation);

// One chunk: "choices": [{"index", "delta": delta, "logprobs": logprobs,
// "finish_reason": ...}], with "usage": null when include_usage.
std::string chat_chunk_json(const ChatHeader& header, const api::OrderedJson& delta,
                            std::optional<std::string_view> finish_reason, bool include_usage,
                            int index = 0, const api::OrderedJson& logprobs = nullptr);

// The last chunk when include_usage: "choices": [], "usage", "speculation".
std::string chat_usage_chunk_json(const ChatHeader& header, const api::Usage& usage,
                                  const api::SpeculationReport& speculation);

}  // namespace tandem::chat
