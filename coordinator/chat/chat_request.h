// The body of POST /v1/chat/completions, read strictly into a ChatRequest.
//
// The sampling, stop, stream and speculation fields are the completions
// route's, read by its own readers (read_shared_field), so both routes
// accept and refuse the same values with the same messages. What is chat's
// own: `messages` (checked, then kept as the client sent them, key order
// included, since the chat template sees them and `tojson` must give the
// client's order), `tools`, `tool_choice`, `chat_template_kwargs`,
// `add_generation_prompt`, `continue_final_message`,
// `max_completion_tokens`, and `logprobs` with `top_logprobs`
// (logprob_fields.h). Every bad field is a 400 naming it, down to the
// element (`messages[2].content[0].type`). Pure functions: thread-safe.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

#include "coordinator/api/completion_request.h"

namespace tandem::chat {

using OrderedJson = nlohmann::ordered_json;

struct ChatRequest {
  // The fields shared with completions; its prompt is unused (the rendered
  // messages are the prompt).
  api::CompletionRequest sampling;
  // max_tokens or max_completion_tokens was sent; otherwise the reply may
  // fill the context (capped by the server's max_tokens limit).
  bool max_tokens_given = false;
  // The field that set it, for errors about it (the context check).
  std::string max_tokens_field = "max_tokens";
  // The messages as sent, except that a content given as a list of text
  // parts is joined into one string (parts joined by "\n", as vLLM does),
  // and an assistant tool call's `arguments` sent as a JSON string holding
  // an object is given to the template as that object (templates index it).
  OrderedJson messages = OrderedJson::array();
  // The tools as sent; null when absent or when tool_choice is "none".
  OrderedJson tools;
  // chat_template_kwargs: merged into the template's context.
  OrderedJson template_kwargs = OrderedJson::object();
  bool add_generation_prompt = true;
  bool continue_final_message = false;
};

// Throws api::ApiError as parse_completion_request does.
ChatRequest parse_chat_request(std::string_view body, const api::RequestLimits& limits);

// The roles a message may have.
bool is_known_role(std::string_view role);

}  // namespace tandem::chat
