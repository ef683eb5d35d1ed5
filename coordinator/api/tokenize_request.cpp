#include "coordinator/api/tokenize_request.h"

#include <algorithm>
#include <array>
#include <span>

namespace tandem::api {
namespace {

using OrderedJson = nlohmann::ordered_json;

constexpr std::array<std::string_view, 3> kBothForms = {"model", "add_special_tokens",
                                                        "return_token_strs"};
constexpr std::array<std::string_view, 1> kPromptForm = {"prompt"};
// The messages form's own fields: chat's, handed to its parser.
constexpr std::array<std::string_view, 6> kMessagesForm = {
    "messages", "add_generation_prompt", "continue_final_message",
    "tools",    "tool_choice",           "chat_template_kwargs"};
// vLLM takes these; this server does not, and says so rather than ignore them.
constexpr std::array<std::string_view, 3> kNotSupported = {"chat_template", "mm_processor_kwargs",
                                                           "media_io_kwargs"};

bool among(std::span<const std::string_view> names, std::string_view key) {
  return std::find(names.begin(), names.end(), key) != names.end();
}

bool given(const Json& root, std::string_view key) {
  const auto it = root.find(key);
  return it != root.end() && !it->is_null();
}

Json parse_object(std::string_view body) {
  Json root = parse_request_body(body);
  if (!root.is_object()) {
    throw invalid_request(std::nullopt, "The request body must be a JSON object, but got " +
                                            json_type_phrase(root) + ".");
  }
  return root;
}

// A given model must be the served one: 404 model_not_found otherwise, in
// the completion routes' words.
void check_model(const Json& root, const RequestLimits& limits) {
  if (!given(root, "model")) return;
  CompletionRequest unused;
  read_shared_field("model", root["model"], limits, unused);
}

// Every key must belong to the chosen form; a null one is an absent one.
void check_fields(const Json& root, bool messages_form) {
  using Names = std::span<const std::string_view>;
  const Names own = messages_form ? Names(kMessagesForm) : Names(kPromptForm);
  const Names other = messages_form ? Names(kPromptForm) : Names(kMessagesForm);
  for (const auto& [key, value] : root.items()) {
    if (among(kBothForms, key) || among(own, key)) continue;
    if (among(kNotSupported, key)) {
      throw invalid_value(key, "this parameter is not supported by this server. Leave it out.");
    }
    if (among(other, key)) {
      if (value.is_null()) continue;
      throw invalid_request(key, messages_form
                                     ? "'" + key + "' cannot be sent with 'messages'; send one of them."
                                     : "'" + key + "' goes with 'messages' (a chat to tokenize), "
                                                   "not with 'prompt'.");
    }
    throw invalid_request(key, "Unrecognized request argument supplied: " + key);
  }
}

// The chat fields, in the body's order (the template sees tools and kwargs
// in the client's order, as chat::parse_chat_request keeps them).
std::string chat_fields(std::string_view body) {
  const OrderedJson ordered = OrderedJson::parse(body.begin(), body.end());
  OrderedJson chat = OrderedJson::object();
  for (const auto& [key, value] : ordered.items()) {
    if (among(kMessagesForm, key)) chat[key] = value;
  }
  return chat.dump();
}

}  // namespace

TokenizeRequest parse_tokenize_request(std::string_view body, const RequestLimits& limits) {
  const Json root = parse_object(body);
  const bool has_prompt = given(root, "prompt");
  const bool has_messages = given(root, "messages");
  if (has_prompt && has_messages) {
    throw invalid_request("messages", "Send either 'prompt' (a text) or 'messages' (a chat), not both.");
  }
  if (!has_prompt && !has_messages) {
    throw invalid_request("prompt", "Missing required parameter: 'prompt' (or 'messages' to "
                                    "tokenize a chat as the chat template renders it).");
  }
  check_fields(root, has_messages);
  check_model(root, limits);

  TokenizeRequest request;
  request.add_special_tokens = !has_messages;
  if (given(root, "add_special_tokens"))
    request.add_special_tokens = read_bool(root["add_special_tokens"], "add_special_tokens");
  if (given(root, "return_token_strs"))
    request.return_token_strs = read_bool(root["return_token_strs"], "return_token_strs");
  if (has_prompt) {
    request.prompt = read_string(root["prompt"], "prompt");
  } else {
    request.chat_body = chat_fields(body);
  }
  return request;
}

std::vector<int32_t> parse_detokenize_request(std::string_view body, const RequestLimits& limits,
                                              int vocab_size) {
  const Json root = parse_object(body);
  for (const auto& [key, value] : root.items()) {
    if (key != "model" && key != "tokens")
      throw invalid_request(key, "Unrecognized request argument supplied: " + key);
  }
  check_model(root, limits);
  if (!given(root, "tokens")) {
    throw invalid_request("tokens", "Missing required parameter: 'tokens'. Send the token ids "
                                    "to turn into text.");
  }
  const Json::array_t& items = read_array(root["tokens"], "tokens");
  std::vector<int32_t> tokens;
  tokens.reserve(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    const std::string where = "tokens[" + std::to_string(i) + "]";
    if (!is_integral_number(items[i])) {
      throw invalid_request("tokens", "Invalid type for '" + where +
                                          "': expected an integer token id, but got " +
                                          json_type_phrase(items[i]) + " instead.");
    }
    const std::optional<int64_t> id = exact_integer(items[i]);
    if (!id || *id < 0 || *id >= vocab_size) {
      throw invalid_request("tokens", "Invalid '" + where + "': token id " +
                                          describe_number(items[i]) +
                                          " is outside this model's vocabulary [0, " +
                                          std::to_string(vocab_size) + ").");
    }
    tokens.push_back(static_cast<int32_t>(*id));
  }
  return tokens;
}

std::string tokenize_json(std::span<const int32_t> tokens, int max_model_len,
                          const std::optional<std::vector<std::string>>& token_strs) {
  OrderedJson body;
  body["count"] = tokens.size();
  body["max_model_len"] = max_model_len;
  body["tokens"] = std::vector<int32_t>(tokens.begin(), tokens.end());
  if (token_strs) body["token_strs"] = *token_strs;
  return body.dump(-1, ' ', false, OrderedJson::error_handler_t::replace);
}

std::string detokenize_json(std::string_view text) {
  OrderedJson body;
  body["prompt"] = text;
  return body.dump(-1, ' ', false, OrderedJson::error_handler_t::replace);
}

}  // namespace tandem::api
