#include "tools/loadtest/conversation.h"

#include <limits>

#include "common/error.h"
#include "tools/loadtest/jsonl_reader.h"

namespace tandem::loadtest {
namespace {

using nlohmann::json;

// The two layouts differ only in their key names and role spellings.
struct Layout {
  const char* list;     // "messages" or "conversations"
  const char* role;     // "role" or "from"
  const char* content;  // "content" or "value"
};
constexpr Layout kOpenAi{"messages", "role", "content"};
constexpr Layout kShareGpt{"conversations", "from", "value"};

std::optional<std::string> role_of(const std::string& given, const Layout& layout) {
  if (given == "system" || given == "user" || given == "assistant") return given;
  if (&layout == &kShareGpt) {
    if (given == "human") return "user";
    if (given == "gpt") return "assistant";
  }
  return std::nullopt;
}

std::vector<ChatMessage> read_messages(const json& list, const Layout& layout, const std::string& where) {
  require(list.is_array() && !list.empty(), ErrorKind::invalid_argument, [&] {
    return where + ": \"" + layout.list + "\" must be a non-empty array of messages";
  });
  std::vector<ChatMessage> messages;
  for (size_t i = 0; i < list.size(); ++i) {
    const json& entry = list[i];
    const std::string field = std::string("\"") + layout.list + "\"[" + std::to_string(i) + "]";
    require(entry.is_object(), ErrorKind::invalid_argument,
            [&] { return where + ": " + field + " must be an object"; });
    const auto role = entry.find(layout.role);
    require(role != entry.end() && role->is_string(), ErrorKind::invalid_argument, [&] {
      return where + ": " + field + "." + layout.role + " must be a string";
    });
    const std::optional<std::string> known = role_of(role->get<std::string>(), layout);
    require(known.has_value(), ErrorKind::invalid_argument, [&] {
      const std::string expected = &layout == &kShareGpt
                                       ? "\"system\", \"human\", \"gpt\", \"user\" or \"assistant\""
                                       : "\"system\", \"user\" or \"assistant\"";
      return where + ": " + field + "." + layout.role + " is \"" + role->get<std::string>() +
             "\"; expected " + expected;
    });
    const auto content = entry.find(layout.content);
    require(content != entry.end() && content->is_string(), ErrorKind::invalid_argument, [&] {
      return where + ": " + field + "." + layout.content + " must be a string";
    });
    require(!(*known == "assistant" && !messages.empty() && messages.back().role == "assistant"),
            ErrorKind::invalid_argument, [&] {
              return where + ": " + field + " is a second assistant message in a row; each "
                     "reply must follow a user message";
            });
    messages.push_back({*known, content->get<std::string>()});
  }
  return messages;
}

Conversation cut_into_turns(std::vector<ChatMessage> messages, const Layout& layout,
                            const std::string& where) {
  Conversation conversation;
  conversation.where = where;
  size_t i = 0;
  for (; i < messages.size() && messages[i].role != "user"; ++i)
    conversation.preamble.push_back(std::move(messages[i]));
  require(i < messages.size(), ErrorKind::invalid_argument, [&] {
    return where + ": \"" + layout.list + "\" has no user message, so there is nothing to send";
  });
  while (i < messages.size()) {
    ConversationTurn turn;
    for (; i < messages.size() && messages[i].role != "assistant"; ++i)
      turn.said.push_back(std::move(messages[i]));
    if (i < messages.size()) turn.recorded_reply = std::move(messages[i++].content);
    // A trailing assistant message after only system messages cannot happen:
    // every turn past the preamble starts at a user message.
    conversation.turns.push_back(std::move(turn));
  }
  return conversation;
}

}  // namespace

std::vector<Conversation> read_conversations(const std::filesystem::path& path) {
  std::vector<Conversation> conversations;
  for_each_jsonl_object(path, [&](const json& object, const std::string& where) {
    const bool openai = object.contains(kOpenAi.list);
    const bool sharegpt = object.contains(kShareGpt.list);
    require(openai != sharegpt, ErrorKind::invalid_argument, [&] {
      return where + (openai ? ": give either \"messages\" or \"conversations\", not both"
                             : ": expected \"messages\" (OpenAI layout) or \"conversations\" "
                               "(ShareGPT layout)");
    });
    const Layout& layout = openai ? kOpenAi : kShareGpt;
    Conversation conversation =
        cut_into_turns(read_messages(object[layout.list], layout, where), layout, where);
    if (const auto max_tokens = object.find("max_tokens"); max_tokens != object.end()) {
      require(max_tokens->is_number_integer() && *max_tokens >= 1 &&
                  *max_tokens <= std::numeric_limits<int>::max(),
              ErrorKind::invalid_argument,
              [&] { return where + ": \"max_tokens\" must be an integer >= 1"; });
      conversation.max_tokens = max_tokens->get<int>();
    }
    conversations.push_back(std::move(conversation));
  });
  return conversations;
}

}  // namespace tandem::loadtest
