// A model's chat template, loaded and parsed once with the model, rendered
// for each chat request.
//
// The template comes from the tokenizer directory: chat_template.jinja when
// present (newer transformers save it so), otherwise tokenizer_config.json's
// "chat_template", a string or a list of {"name", "template"} of which the
// one named "default" is used. A model without one, or with one this server
// cannot parse, still serves /v1/completions; its chat requests get a 400
// that says why (unavailable_reason()), and `tandem chat-template` exits
// with the same words.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "common/jinja/template.h"
#include "coordinator/chat/chat_context.h"
#include "coordinator/chat/chat_request.h"
#include "coordinator/chat/tool_call_parser.h"

namespace tandem::chat {

class ChatTemplate {
 public:
  // Reads the template of the model in `tokenizer_dir`; `model_name` names
  // it in messages. Never throws: a missing or broken template becomes
  // unavailable_reason().
  static ChatTemplate load(const std::filesystem::path& tokenizer_dir, const std::string& model_name);
  // From the template's text directly (tests, models without files).
  static ChatTemplate from_source(const std::string& source, TemplateTokens tokens);
  // No template: every render() is a 400 with `reason`.
  static ChatTemplate unavailable(std::string reason);

  bool available() const { return parsed_ != nullptr; }
  const std::string& unavailable_reason() const { return reason_; }

  // The text the server tokenizes for `request`. Throws api::ApiError 400:
  // param "messages" with the template's own words when it fails or raises
  // (raise_exception), "continue_final_message" when the cut fails, and no
  // param with unavailable_reason() when the model has no template.
  std::string render(const ChatRequest& request) const;

  // How tool calls in this model's output are written (from the source).
  ToolCallFormat tool_call_format() const { return format_; }

 private:
  std::shared_ptr<const jinja::Template> parsed_;  // shared: ChatTemplate is copied freely
  TemplateTokens tokens_;
  ToolCallFormat format_ = ToolCallFormat::none;
  std::string reason_;
};

}  // namespace tandem::chat
