// POST /tokenize and POST /detokenize: vLLM's extension routes, with its
// request and response shapes, read as strictly as the completion routes.
//
//   /tokenize    {"model"?, "prompt": str, "add_special_tokens"?: bool = true,
//                 "return_token_strs"?: bool}
//             or {"model"?, "messages": [...], "add_generation_prompt"?,
//                 "continue_final_message"?, "tools"?, "tool_choice"?,
//                 "chat_template_kwargs"?, "add_special_tokens"?: bool = false,
//                 "return_token_strs"?: bool}
//             -> {"count", "max_model_len", "tokens", "token_strs" (when asked)}
//   /detokenize  {"model"?, "tokens": [int, ...]} -> {"prompt": str}
//
// The messages form is rendered by the chat template exactly as a chat
// request's messages are (its fields are chat's, read by chat's own parser),
// so its tokens are that request's prompt. A null field is an absent one; an
// unknown field, a field of the other form, a wrong type or an id outside the
// vocabulary is a 400 naming it; another model is a 404 model_not_found.
// Pure functions: thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "coordinator/api/completion_request.h"

namespace tandem::api {

struct TokenizeRequest {
  // The prompt form's text; nullopt for the messages form.
  std::optional<std::string> prompt;
  // The messages form: its chat fields, in the body's order, as a body that
  // chat::parse_chat_request reads (model left out: checked here).
  std::string chat_body;
  bool add_special_tokens = true;  // default: true with prompt, false with messages (vLLM's)
  bool return_token_strs = false;
};

TokenizeRequest parse_tokenize_request(std::string_view body, const RequestLimits& limits);

// tokens: ids in [0, vocab_size), the tokenizer's.
std::vector<int32_t> parse_detokenize_request(std::string_view body, const RequestLimits& limits,
                                              int vocab_size);

// {"count", "max_model_len", "tokens"} and "token_strs" when given.
std::string tokenize_json(std::span<const int32_t> tokens, int max_model_len,
                          const std::optional<std::vector<std::string>>& token_strs);
// {"prompt": text}; invalid UTF-8 becomes U+FFFD.
std::string detokenize_json(std::string_view text);

}  // namespace tandem::api
