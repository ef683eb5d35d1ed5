// Multi-turn workloads: conversations read from JSONL, one per line, in
// either common layout:
//   OpenAI:   {"messages": [{"role": "system"|"user"|"assistant", "content": "..."}, ...]}
//   ShareGPT: {"conversations": [{"from": "system"|"human"|"gpt", "value": "..."}, ...]}
// ("user" and "assistant" are accepted in "from" too). A line may also give
// "max_tokens" (an integer >= 1) for each of its turns; other fields (ids,
// sources) are ignored, so datasets load as they are.
//
// A conversation is cut into turns: messages before the first user message
// are its preamble (a system prompt, a greeting), sent as they are; each turn
// is what the user says (a user message and any system or user messages up
// to the next assistant message) and the recorded reply that follows, if any.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "tools/loadtest/chat_request.h"

namespace tandem::loadtest {

struct ConversationTurn {
  std::vector<ChatMessage> said;  // the user's messages of this turn, in order
  std::optional<std::string> recorded_reply;  // the assistant's answer in the file
};

struct Conversation {
  std::string where;  // "file:line", for messages about it
  std::vector<ChatMessage> preamble;
  std::vector<ConversationTurn> turns;  // at least one
  std::optional<int> max_tokens;        // the line's own, when it gives one
};

// Every conversation of the file, in order; blank lines are skipped. Error
// (invalid_argument) naming file:line and the field at fault for a line that
// is not an object, has neither or both of "messages" and "conversations",
// a message without a known role or with a non-string text, two assistant
// messages in a row, or no user message at all.
std::vector<Conversation> read_conversations(const std::filesystem::path& path);

}  // namespace tandem::loadtest
