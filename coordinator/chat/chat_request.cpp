#include "coordinator/chat/chat_request.h"

#include <array>

#include "coordinator/api/logprob_fields.h"

namespace tandem::chat {
namespace {

using api::Json;
using api::invalid_request;
using api::invalid_value;
using api::wrong_type;

constexpr std::array<std::string_view, 4> kRoles = {"system", "user", "assistant", "tool"};

// Chat's own fields; the shared ones are read_shared_field's.
constexpr std::array<std::string_view, 11> kChatFields = {
    "messages",     "max_completion_tokens", "tools",        "tool_choice",
    "parallel_tool_calls", "chat_template_kwargs", "add_generation_prompt",
    "continue_final_message", "logprobs", "top_logprobs", "response_format"};

api::ApiError unrecognized(const std::string& key) {
  return invalid_request(key, "Unrecognized request argument supplied: " + key);
}

std::string at(std::string_view base, size_t index) {
  return std::string(base) + "[" + std::to_string(index) + "]";
}

// A list of {"type": "text", "text": ...} parts, joined by "\n".
std::string read_text_parts(const Json& parts, const std::string& where) {
  std::string text;
  for (size_t j = 0; j < parts.size(); ++j) {
    const std::string part = at(where, j);
    const Json& item = parts[j];
    if (!item.is_object()) throw wrong_type(part, "an object", item);
    const auto type = item.find("type");
    if (type == item.end()) throw invalid_request(part + ".type", "Missing required parameter: '" + part + ".type'.");
    const std::string& kind = api::read_string(*type, part + ".type");
    if (kind != "text") {
      throw invalid_value(part + ".type", "content parts of type \"" + kind +
                                              "\" are not supported; this server takes only "
                                              "\"text\" parts.");
    }
    const auto value = item.find("text");
    if (value == item.end()) throw invalid_request(part + ".text", "Missing required parameter: '" + part + ".text'.");
    if (j > 0) text += '\n';
    text += api::read_string(*value, part + ".text");
  }
  return text;
}

void check_tool_calls(const Json& calls, const std::string& where) {
  const Json::array_t& items = api::read_array(calls, where);
  for (size_t k = 0; k < items.size(); ++k) {
    const std::string call = at(where, k);
    if (!items[k].is_object()) throw wrong_type(call, "an object", items[k]);
    const auto function = items[k].find("function");
    if (function == items[k].end())
      throw invalid_request(call + ".function", "Missing required parameter: '" + call + ".function'.");
    api::read_object(*function, call + ".function");
    const auto name = function->find("name");
    if (name == function->end())
      throw invalid_request(call + ".function.name", "Missing required parameter: '" + call + ".function.name'.");
    api::read_string(*name, call + ".function.name");
    if (const auto arguments = function->find("arguments"); arguments != function->end()) {
      if (!arguments->is_string() && !arguments->is_object())
        throw wrong_type(call + ".function.arguments", "a string or an object", *arguments);
    }
  }
}

// Checks message i on the plain parse; normalises its ordered twin.
void read_message(const Json& message, OrderedJson& ordered, size_t i) {
  const std::string where = at("messages", i);
  if (!message.is_object()) throw wrong_type(where, "an object", message);
  const auto role_it = message.find("role");
  if (role_it == message.end())
    throw invalid_request(where + ".role", "Missing required parameter: '" + where + ".role'.");
  const std::string& role = api::read_string(*role_it, where + ".role");
  if (!is_known_role(role)) {
    throw invalid_value(where + ".role", "\"" + role +
                                             "\" is not a role; expected one of \"system\", "
                                             "\"user\", \"assistant\", \"tool\".");
  }
  const auto content = message.find("content");
  const bool has_calls = message.contains("tool_calls") && !message["tool_calls"].is_null();
  if (content == message.end() || content->is_null()) {
    // Only an assistant message that calls tools may go without content.
    if (!(role == "assistant" && has_calls))
      throw invalid_request(where + ".content", "Missing required parameter: '" + where + ".content'.");
  } else if (content->is_array()) {
    ordered["content"] = read_text_parts(*content, where + ".content");
  } else if (!content->is_string()) {
    throw wrong_type(where + ".content", "a string or an array of text parts", *content);
  }
  if (has_calls) {
    if (role != "assistant")
      throw invalid_value(where + ".tool_calls", "only assistant messages carry tool calls.");
    check_tool_calls(message["tool_calls"], where + ".tool_calls");
    // Arguments sent as JSON text become the object they hold: templates
    // write `tool_call.arguments | tojson` or iterate over them.
    for (OrderedJson& call : ordered["tool_calls"]) {
      OrderedJson& function = call["function"];
      const auto arguments = function.find("arguments");
      if (arguments == function.end() || !arguments->is_string()) continue;
      OrderedJson parsed = OrderedJson::parse(arguments->get<std::string>(), nullptr, false);
      if (parsed.is_object()) *arguments = std::move(parsed);
    }
  }
  if (role == "tool") {
    const auto id = message.find("tool_call_id");
    if (id == message.end() || id->is_null())
      throw invalid_request(where + ".tool_call_id", "Missing required parameter: '" + where + ".tool_call_id'.");
    api::read_string(*id, where + ".tool_call_id");
  }
}

void read_messages(const Json& value, OrderedJson ordered, ChatRequest& request) {
  const Json::array_t& items = api::read_array(value, "messages");
  if (items.empty()) throw invalid_value("messages", "the list is empty. Send at least one message.");
  for (size_t i = 0; i < items.size(); ++i) read_message(items[i], ordered[i], i);
  request.messages = std::move(ordered);
}

void check_tools(const Json& value) {
  const Json::array_t& items = api::read_array(value, "tools");
  for (size_t i = 0; i < items.size(); ++i) {
    const std::string where = at("tools", i);
    if (!items[i].is_object()) throw wrong_type(where, "an object", items[i]);
    const auto type = items[i].find("type");
    if (type == items[i].end() || !type->is_string() || type->get<std::string>() != "function")
      throw invalid_value(where + ".type", "expected \"function\".");
    const auto function = items[i].find("function");
    if (function == items[i].end())
      throw invalid_request(where + ".function", "Missing required parameter: '" + where + ".function'.");
    api::read_object(*function, where + ".function");
    const auto name = function->find("name");
    if (name == function->end())
      throw invalid_request(where + ".function.name", "Missing required parameter: '" + where + ".function.name'.");
    api::read_string(*name, where + ".function.name");
    if (const auto parameters = function->find("parameters"); parameters != function->end())
      api::read_object(*parameters, where + ".function.parameters");
  }
}

// "auto" or "none"; "required" and a named function would need constrained
// decoding, which this server does not do, so they are refused, not ignored.
bool tool_choice_is_none(const Json& value) {
  if (value.is_string()) {
    const std::string& choice = value.get_ref<const std::string&>();
    if (choice == "none") return true;
    if (choice == "auto") return false;
    if (choice == "required")
      throw invalid_value("tool_choice", "\"required\" is not supported by this server (it cannot "
                                         "force a call). Send \"auto\" or \"none\".");
    throw invalid_value("tool_choice", "expected \"auto\" or \"none\", but got " + value.dump() + ".");
  }
  if (value.is_object())
    throw invalid_value("tool_choice", "naming a function is not supported by this server (it "
                                       "cannot force a call). Send \"auto\" or \"none\".");
  throw wrong_type("tool_choice", "a string", value);
}

void read_template_kwargs(const Json& value, const OrderedJson& ordered, ChatRequest& request) {
  for (const auto& [key, item] : api::read_object(value, "chat_template_kwargs")) {
    if (key == "messages" || key == "tools" || key == "add_generation_prompt") {
      throw invalid_value("chat_template_kwargs." + key,
                          "this is set by the request itself; send it as the top-level field.");
    }
  }
  request.template_kwargs = ordered;
}

void read_chat_field(const std::string& key, const Json& value, const OrderedJson& ordered,
                     const api::RequestLimits& limits, ChatRequest& request) {
  if (key == "messages") {
    read_messages(value, ordered, request);
  } else if (key == "max_completion_tokens") {
    request.sampling.max_tokens =
        static_cast<int>(api::read_integer(value, key, 1, limits.max_tokens_limit));
  } else if (key == "tools") {
    check_tools(value);
    request.tools = ordered;
  } else if (key == "tool_choice" || key == "parallel_tool_calls") {
    // tool_choice is applied once tools are known (parse_chat_request).
    if (key == "parallel_tool_calls") api::read_bool(value, key);
  } else if (key == "chat_template_kwargs") {
    read_template_kwargs(value, ordered, request);
  } else if (key == "add_generation_prompt") {
    request.add_generation_prompt = api::read_bool(value, key);
  } else if (key == "continue_final_message") {
    request.continue_final_message = api::read_bool(value, key);
  } else if (key == "response_format") {
    throw invalid_value(key, "this parameter is not supported by this server. Leave it out or set it to null.");
  }
}

}  // namespace

bool is_known_role(std::string_view role) {
  for (std::string_view known : kRoles)
    if (known == role) return true;
  return false;
}

ChatRequest parse_chat_request(std::string_view body, const api::RequestLimits& limits) {
  const Json root = api::parse_request_body(body);
  if (!root.is_object()) {
    throw invalid_request(std::nullopt, "The request body must be a JSON object, but got " +
                                            api::json_type_phrase(root) + ".");
  }
  // The same text again, keeping key order, for what the template sees.
  const OrderedJson ordered_root = OrderedJson::parse(body.begin(), body.end());

  ChatRequest request;
  request.sampling = api::default_request(limits);
  for (const auto& [key, value] : root.items()) {
    bool chat_field = false;
    for (std::string_view name : kChatFields) chat_field |= name == key;
    if (!chat_field && !api::read_shared_field(key, Json(nullptr), limits, request.sampling))
      throw unrecognized(key);
  }
  // Shared fields first, in the body's order, then chat's own.
  for (const auto& [key, value] : root.items()) {
    if (value.is_null()) continue;
    if (api::read_shared_field(key, value, limits, request.sampling)) {
      request.max_tokens_given |= key == "max_tokens";
      continue;
    }
    read_chat_field(key, value, ordered_root[key], limits, request);
    request.max_tokens_given |= key == "max_completion_tokens";
  }
  // max_completion_tokens (OpenAI's current name) wins over max_tokens.
  if (const auto it = root.find("max_completion_tokens"); it != root.end() && !it->is_null()) {
    request.sampling.max_tokens = static_cast<int>(it->get<double>());
    request.max_tokens_field = "max_completion_tokens";
  }

  api::read_chat_logprobs(root, request.sampling);  // logprobs, top_logprobs
  if (request.sampling.max_tokens == 0) {
    throw invalid_value("max_tokens", "Expected a value in [1, " +
                                          std::to_string(limits.max_tokens_limit) + "], but got 0 instead.");
  }

  if (request.messages.empty()) {
    throw invalid_request("messages", "Missing required parameter: 'messages'. "
                                      "Send the conversation as a list of {role, content} messages.");
  }
  if (const auto it = root.find("stream_options");
      it != root.end() && !it->is_null() && !request.sampling.stream) {
    throw invalid_request("stream_options",
                          "The 'stream_options' parameter is only allowed when 'stream' is enabled.");
  }
  if (const auto it = root.find("tool_choice"); it != root.end() && !it->is_null()) {
    if (tool_choice_is_none(*it)) request.tools = nullptr;
  }
  if (request.tools.is_array() && request.tools.empty()) request.tools = nullptr;

  // continue_final_message leaves the last (assistant) message open for the
  // model to go on, so no generation prompt may follow it; when the client
  // did not say, add_generation_prompt defaults to false then.
  if (request.continue_final_message) {
    const auto explicit_prompt = root.find("add_generation_prompt");
    if (explicit_prompt != root.end() && !explicit_prompt->is_null() && request.add_generation_prompt) {
      throw invalid_value("continue_final_message",
                          "it cannot be combined with add_generation_prompt: true (the final "
                          "message is continued, so no new assistant turn is opened). Set "
                          "add_generation_prompt to false.");
    }
    request.add_generation_prompt = false;
    if (request.messages.back()["role"] != "assistant") {
      throw invalid_value("continue_final_message",
                          "the last message must be an assistant message to continue, but it is a " +
                              request.messages.back()["role"].get<std::string>() + " message.");
    }
  }
  return request;
}

}  // namespace tandem::chat
