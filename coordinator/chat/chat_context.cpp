#include "coordinator/chat/chat_context.h"

#include "common/error.h"

namespace tandem::chat {
namespace {

std::string token_string(const OrderedJson& config, const char* key) {
  const auto it = config.find(key);
  if (it == config.end() || it->is_null()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object()) {
    const auto content = it->find("content");
    if (content != it->end() && content->is_string()) return content->get<std::string>();
  }
  throw Error(ErrorKind::corrupt_data, std::string("tokenizer_config.json: ") + key +
                                           " is neither a string nor an object with \"content\"");
}

// Python's str.strip(): the whitespace str.isspace() knows in ASCII.
std::string_view strip(std::string_view text) {
  constexpr std::string_view kSpace = " \t\n\r\f\v";
  const size_t first = text.find_first_not_of(kSpace);
  if (first == std::string_view::npos) return {};
  return text.substr(first, text.find_last_not_of(kSpace) - first + 1);
}

}  // namespace

TemplateTokens template_tokens(const OrderedJson& tokenizer_config) {
  return TemplateTokens{token_string(tokenizer_config, "bos_token"),
                        token_string(tokenizer_config, "eos_token")};
}

OrderedJson chat_context(const ChatRequest& request, const TemplateTokens& tokens) {
  OrderedJson context = request.template_kwargs;
  context["messages"] = request.messages;
  if (!request.tools.is_null()) context["tools"] = request.tools;
  context["add_generation_prompt"] = request.add_generation_prompt;
  if (!context.contains("bos_token")) context["bos_token"] = tokens.bos_token;
  if (!context.contains("eos_token")) context["eos_token"] = tokens.eos_token;
  return context;
}

std::string cut_after_final_message(std::string rendered, const std::string& final_content) {
  const std::string_view stripped = strip(final_content);
  const size_t stripped_at = rendered.rfind(stripped);
  if (stripped_at == std::string::npos) {
    throw api::invalid_request(
        "continue_final_message",
        "continue_final_message is set but the final message does not appear in the chat after "
        "applying the chat template (the template changes it). Send it without "
        "continue_final_message.");
  }
  // A final message with trailing whitespace: templates may strip it, so
  // the cut keeps it only where the rendered text does.
  size_t end = stripped_at + stripped.size();
  if (stripped.size() != final_content.size() &&
      std::string_view(rendered).substr(stripped_at).starts_with(final_content)) {
    end = rendered.rfind(final_content) + final_content.size();
  } else if (stripped.size() == final_content.size()) {
    end = rendered.rfind(final_content) + final_content.size();
  }
  rendered.resize(end);
  return rendered;
}

}  // namespace tandem::chat
