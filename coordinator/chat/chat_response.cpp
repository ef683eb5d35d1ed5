#include "coordinator/chat/chat_response.h"

namespace tandem::chat {
namespace {

using api::OrderedJson;

std::string dump(const OrderedJson& value) {
  return value.dump(-1, ' ', false, OrderedJson::error_handler_t::replace);
}

OrderedJson header_object(const ChatHeader& header, const char* object) {
  OrderedJson body;
  body["id"] = header.id;
  body["object"] = object;
  body["created"] = header.created_unix;
  body["model"] = header.model;
  return body;
}

}  // namespace

std::string new_tool_call_id() { return api::new_id("call_", 24); }

OrderedJson tool_call_object(const ToolCall& call, const std::string& id, std::optional<int> index) {
  OrderedJson out;
  if (index) out["index"] = *index;
  out["id"] = id;
  out["type"] = "function";
  out["function"] = {{"name", call.name}, {"arguments", call.arguments}};
  return out;
}

OrderedJson chat_choice_object(int index, const std::optional<std::string>& content,
                               const OrderedJson& tool_calls, std::string_view finish_reason,
                               const OrderedJson& logprobs) {
  OrderedJson message;
  message["role"] = "assistant";
  message["content"] = content ? OrderedJson(*content) : OrderedJson(nullptr);
  if (tool_calls.is_array() && !tool_calls.empty()) message["tool_calls"] = tool_calls;
  OrderedJson choice;
  choice["index"] = index;
  choice["message"] = std::move(message);
  choice["logprobs"] = logprobs;
  choice["finish_reason"] = finish_reason;
  return choice;
}

std::string chat_completion_json(const ChatHeader& header, OrderedJson choices,
                                 const api::Usage& usage, const api::SpeculationReport& speculation) {
  OrderedJson body = header_object(header, "chat.completion");
  body["choices"] = std::move(choices);
  body["usage"] = api::usage_object(usage);
  body["speculation"] = api::speculation_object(speculation);
  return dump(body);
}

std::string chat_completion_json(const ChatHeader& header, const std::optional<std::string>& content,
                                 const OrderedJson& tool_calls, std::string_view finish_reason,
                                 const api::Usage& usage, const api::SpeculationReport& speculation,
                                 const OrderedJson& logprobs) {
  return chat_completion_json(
      header, OrderedJson::array({chat_choice_object(0, content, tool_calls, finish_reason, logprobs)}),
      usage, speculation);
}

std::string chat_chunk_json(const ChatHeader& header, const OrderedJson& delta,
                            std::optional<std::string_view> finish_reason, bool include_usage,
                            int index, const OrderedJson& logprobs) {
  OrderedJson choice;
  choice["index"] = index;
  choice["delta"] = delta.is_null() ? OrderedJson::object() : delta;
  choice["logprobs"] = logprobs;
  choice["finish_reason"] = finish_reason ? OrderedJson(*finish_reason) : OrderedJson(nullptr);
  OrderedJson body = header_object(header, "chat.completion.chunk");
  body["choices"] = OrderedJson::array({std::move(choice)});
  if (include_usage) body["usage"] = nullptr;
  return dump(body);
}

std::string chat_usage_chunk_json(const ChatHeader& header, const api::Usage& usage,
                                  const api::SpeculationReport& speculation) {
  OrderedJson body = header_object(header, "chat.completion.chunk");
  body["choices"] = OrderedJson::array();
  body["usage"] = api::usage_object(usage);
  body["speculation"] = api::speculation_object(speculation);
  return dump(body);
}

}  // namespace tandem::chat
