#include "tools/loadtest/chat_request.h"

#include "common/error.h"

namespace tandem::loadtest {

Api parse_api(const std::string& name) {
  if (name == "completions") return Api::completions;
  if (name == "chat") return Api::chat;
  throw Error(ErrorKind::invalid_argument,
              "--endpoint must be \"completions\" or \"chat\", not \"" + name + "\"");
}

const char* default_path(Api api) {
  return api == Api::chat ? "/v1/chat/completions" : "/v1/completions";
}

std::string chat_request_body(const std::vector<ChatMessage>& messages, int max_tokens,
                              const nlohmann::json& extra, const std::string& model,
                              const nlohmann::json& overrides) {
  require(extra.is_object() || extra.is_null(), ErrorKind::invalid_argument,
          "a work item's extra fields must be a JSON object");
  require(overrides.is_object() || overrides.is_null(), ErrorKind::invalid_argument,
          "request overrides must be a JSON object, e.g. {\"ignore_eos\": true}");
  // Ordered as request_body orders the completions body: model, messages, max_tokens.
  nlohmann::ordered_json body = nlohmann::ordered_json::object();
  if (!model.empty()) body["model"] = model;
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const ChatMessage& message : messages)
    list.push_back({{"role", message.role}, {"content", message.content}});
  body["messages"] = std::move(list);
  body["max_tokens"] = max_tokens;
  for (const nlohmann::json* source : {&extra, &overrides}) {
    if (source->is_null()) continue;
    for (const auto& [key, value] : source->items()) body[key] = value;
  }
  return body.dump();
}

std::string chat_request_body(const WorkItem& item, const std::string& model,
                              const nlohmann::json& overrides) {
  return chat_request_body({{"user", item.prompt}}, item.max_tokens, item.extra, model, overrides);
}

}  // namespace tandem::loadtest
