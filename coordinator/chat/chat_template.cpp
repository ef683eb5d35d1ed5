#include "coordinator/chat/chat_template.h"

#include <fstream>
#include <sstream>

#include "common/error.h"

namespace tandem::chat {
namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in && !in.eof()) throw Error(ErrorKind::not_found, "cannot read " + path.string());
  return text.str();
}

// tokenizer_config.json's chat_template: a string, or the "default" entry of
// a list of {name, template}. Empty when there is none.
std::string template_from_config(const OrderedJson& config) {
  const auto it = config.find("chat_template");
  if (it == config.end() || it->is_null()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_array()) {
    for (const OrderedJson& entry : *it) {
      if (!entry.is_object()) continue;
      const auto name = entry.find("name");
      const auto text = entry.find("template");
      if (name != entry.end() && *name == "default" && text != entry.end() && text->is_string())
        return text->get<std::string>();
    }
    throw Error(ErrorKind::corrupt_data,
                "tokenizer_config.json: chat_template is a list without an entry named \"default\"");
  }
  throw Error(ErrorKind::corrupt_data,
              "tokenizer_config.json: chat_template is neither a string nor a list of {name, template}");
}

}  // namespace

ChatTemplate ChatTemplate::unavailable(std::string reason) {
  ChatTemplate chat;
  chat.reason_ = std::move(reason);
  return chat;
}

ChatTemplate ChatTemplate::from_source(const std::string& source, TemplateTokens tokens) {
  ChatTemplate chat;
  chat.parsed_ = std::make_shared<const jinja::Template>(jinja::Template::parse(source));
  chat.tokens_ = std::move(tokens);
  chat.format_ = tool_call_format_of(source);
  return chat;
}

ChatTemplate ChatTemplate::load(const fs::path& tokenizer_dir, const std::string& model_name) {
  const std::string what = "the model " + model_name + " (" + tokenizer_dir.string() + ")";
  try {
    OrderedJson config = OrderedJson::object();
    const fs::path config_path = tokenizer_dir / "tokenizer_config.json";
    if (fs::exists(config_path)) {
      config = OrderedJson::parse(read_file(config_path), nullptr, false);
      if (!config.is_object())
        throw Error(ErrorKind::corrupt_data, "tokenizer_config.json is not a JSON object");
    }
    std::string source;
    const fs::path jinja_path = tokenizer_dir / "chat_template.jinja";
    source = fs::exists(jinja_path) ? read_file(jinja_path) : template_from_config(config);
    if (source.empty()) {
      return unavailable(what +
                         " has no chat template, so /v1/chat/completions cannot format its "
                         "messages. Add one as \"chat_template\" in its tokenizer_config.json or as "
                         "chat_template.jinja beside it, or use /v1/completions.");
    }
    return from_source(source, template_tokens(config));
  } catch (const Error& error) {
    return unavailable("the chat template of " + what + " cannot be used: " + error.what());
  }
}

std::string ChatTemplate::render(const ChatRequest& request) const {
  if (!parsed_) throw api::invalid_request(std::nullopt, reason_);
  std::string rendered;
  try {
    rendered = parsed_->render(chat_context(request, tokens_));
  } catch (const Error& error) {
    throw api::invalid_request("messages", error.what());
  }
  if (!request.continue_final_message) return rendered;
  const OrderedJson& final_message = request.messages.back();
  const auto content = final_message.find("content");  // may be absent: a message of tool calls
  if (content == final_message.end() || !content->is_string()) {
    throw api::invalid_request("continue_final_message",
                               "the final message has no content to continue.");
  }
  return cut_after_final_message(std::move(rendered), content->get<std::string>());
}

}  // namespace tandem::chat
