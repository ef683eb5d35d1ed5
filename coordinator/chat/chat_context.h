// What a chat template is rendered with, and what transformers does around
// the rendering: the context (messages, tools, add_generation_prompt,
// bos_token, eos_token and the request's chat_template_kwargs), and the cut
// that continue_final_message makes. Pure functions, tested without a
// template engine.
#pragma once

#include <string>
#include <string_view>

#include "coordinator/chat/chat_request.h"

namespace tandem::chat {

// The special-token strings a template may write, from tokenizer_config.json.
struct TemplateTokens {
  std::string bos_token;  // "" when the config has none
  std::string eos_token;
};

// bos_token / eos_token of a tokenizer_config.json: a string, or an object
// with "content" (the AddedToken form); "" when absent or null. Throws
// Error(corrupt_data) for any other shape.
TemplateTokens template_tokens(const OrderedJson& tokenizer_config);

// The context: chat_template_kwargs first, then messages, tools (only when
// the request has them), add_generation_prompt, bos_token and eos_token,
// which the kwargs cannot override (the request parser refuses the first
// three there; bos/eos from the kwargs are taken as the client's choice).
OrderedJson chat_context(const ChatRequest& request, const TemplateTokens& tokens);

// continue_final_message, as transformers' apply_chat_template does it: the
// rendered text ends right after the final message's content (whatever the
// template wrote after it, an end-of-turn token say, is cut). Throws
// api::ApiError (400, param "continue_final_message") when the content does
// not appear in the rendered text.
std::string cut_after_final_message(std::string rendered, const std::string& final_content);

}  // namespace tandem::chat
