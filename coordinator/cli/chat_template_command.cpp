// `tandem chat-template`: the text the server would tokenize for a chat
// request, rendered by the model's chat template exactly as
// /v1/chat/completions renders it (the same parser, context and cut), for
// checking a template against transformers' apply_chat_template.
//
//   tandem chat-template --model DIR --request '{"messages":[{"role":"user","content":"Hi"}]}'
//   tandem chat-template --model DIR --request @request.json
//
// Prints the text and nothing else (no trailing newline); a request the
// server would refuse, or a template that fails, exits non-zero with the
// server's message.
#include <cstdio>
#include <fstream>
#include <limits>
#include <memory>
#include <sstream>
#include <string>

#include "common/error.h"
#include "coordinator/chat/chat_template.h"
#include "coordinator/cli/commands.h"

namespace tandem::cli {
namespace {

struct ChatTemplateFlags {
  std::string model;
  std::string request;
};

std::string request_text(const std::string& flag) {
  if (!flag.starts_with("@")) return flag;
  const std::string path = flag.substr(1);
  std::ifstream in(path, std::ios::binary);
  require(in.good(), ErrorKind::not_found, "--request: cannot read " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

int render(const ChatTemplateFlags& flags) {
  const std::string body = request_text(flags.request);
  const chat::ChatTemplate chat_template = chat::ChatTemplate::load(flags.model, flags.model);
  api::RequestLimits limits;
  limits.max_tokens_limit = std::numeric_limits<int>::max();
  // Any model name: the command renders for this model whatever it is called.
  const nlohmann::json peek = nlohmann::json::parse(body, nullptr, false);
  if (peek.is_object() && peek.contains("model") && peek["model"].is_string())
    limits.served_model_name = peek["model"].get<std::string>();
  std::string text;
  try {
    text = chat_template.render(chat::parse_chat_request(body, limits));
  } catch (const api::ApiError& error) {
    throw Error(ErrorKind::invalid_argument,
                (error.param ? *error.param + ": " : std::string()) + error.message);
  }
  std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}

}  // namespace

Run define_chat_template(Command& command) {
  auto flags = std::make_shared<ChatTemplateFlags>();
  add_value(command, "--model", flags->model,
            "the model directory (tokenizer_config.json, or chat_template.jinja)")
      .type_name("DIR")
      .required();
  add_value(command, "--request", flags->request,
            "a /v1/chat/completions request body as JSON, or @FILE to read it from a file")
      .type_name("JSON")
      .required();
  return [flags] { return render(*flags); };
}

}  // namespace tandem::cli
