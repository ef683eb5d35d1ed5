// The /v1/chat/completions side of the load generator's requests: which API
// a run speaks (Api), and the chat body a workload item or a conversation's
// history becomes. The chat body carries the same fields as the completions
// body (max_tokens, sampling, speculation...), with "messages" in place of
// "prompt", so the two APIs are measured on the same requests.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/loadtest/workload.h"

namespace tandem::loadtest {

enum class Api { completions, chat };

// "completions" or "chat"; Error (invalid_argument) naming --endpoint otherwise.
Api parse_api(const std::string& name);

// Where a URL without a path sends each API: /v1/completions, /v1/chat/completions.
const char* default_path(Api api);

struct ChatMessage {
  std::string role;  // "system", "user" or "assistant"
  std::string content;
  bool operator==(const ChatMessage&) const = default;
};

// The /v1/chat/completions JSON body: "model" (left out when empty),
// "messages", "max_tokens", then `extra`, then `overrides` (each an object or
// null; a later source wins, as in request_body). Streaming is added by
// streaming_body, as for completions.
std::string chat_request_body(const std::vector<ChatMessage>& messages, int max_tokens,
                              const nlohmann::json& extra, const std::string& model,
                              const nlohmann::json& overrides);

// A workload item as a chat: its prompt becomes the one user message.
std::string chat_request_body(const WorkItem& item, const std::string& model,
                              const nlohmann::json& overrides);

}  // namespace tandem::loadtest
