// POST /v1/chat/completions: parse the chat request, render its messages
// with the model's chat template (parsed once, at load), tokenize the text
// with special tokens recognized and no BOS of the tokenizer's own (the
// template writes the one the model wants), and from there the very path of
// a completion given token ids (make_job, job_flow.h). Tool calls in the
// output, when the request offers tools, become message.tool_calls
// (coordinator/chat/chat_reply.h writes the reply).
#include <algorithm>

#include "common/error.h"
#include "coordinator/chat/chat_reply.h"
#include "coordinator/server/api_service.h"
#include "coordinator/server/job_flow.h"

namespace tandem {
namespace {

namespace asio = boost::asio;
namespace bhttp = boost::beast::http;

using chat::ChatHeader;

chat::ReplyEnd reply_end(const CompletionEnd& end) {
  return chat::ReplyEnd{end.finish_reason, end.usage, end.speculation};
}

// The chat stream: ChatChunker's chunks.
class ChatEvents final : public EventFormat {
 public:
  ChatEvents(ChatHeader header, chat::ToolCallFormat format, bool include_usage, bool logprobs)
      : chunker_(std::move(header), format, include_usage, logprobs) {}
  std::vector<std::string> opening() override { return chunker_.opening(); }
  std::vector<std::string> text(const std::string& piece,
                                std::vector<api::LogprobEntry> logprobs) override {
    return chunker_.text(piece, std::move(logprobs));
  }
  std::vector<std::string> end(const CompletionEnd& end) override {
    return chunker_.end(reply_end(end));
  }

 private:
  chat::ChatChunker chunker_;
};

// The chat.completion body, with the logprobs when asked for.
std::string whole_reply(const ChatHeader& header, const FinishedJob& finished,
                        chat::ToolCallFormat format, bool logprobs) {
  const api::OrderedJson shown =
      logprobs ? api::chat_logprobs_json(finished.logprobs) : api::OrderedJson(nullptr);
  return chat::chat_reply_json(header, finished.text, format, reply_end(finished.end), shown);
}

}  // namespace

asio::awaitable<void> ApiService::chat(http::Exchange& exchange) {
  const http::Request& http_request = exchange.request();
  std::optional<api::ApiError> rejection;
  EngineLoop* engine_loop = serving_engine_loop(rejection);
  chat::ChatRequest request;
  CompletionJob job;
  if (engine_loop) {
    try {
      request = chat::parse_chat_request(http_request.body(), settings_.limits);
      const std::string rendered = chat_template_->render(request);
      std::vector<int32_t> prompt = tokenizer_->encode(rendered, /*add_special=*/false);
      if (prompt.empty())
        throw api::invalid_request("messages", "the messages render to no tokens");
      // No max_tokens: as far as the context goes (OpenAI's chat default),
      // or the KV cache where it holds less.
      if (!request.max_tokens_given) {
        const int room = request_token_limit() - static_cast<int>(prompt.size());
        request.sampling.max_tokens = std::max(1, std::min(settings_.limits.max_tokens_limit, room));
      }
      job = make_job(request.sampling, std::move(prompt));
    } catch (const api::ApiError& error) {
      rejection = error;
      // The context check names max_tokens; the client may have said max_completion_tokens.
      if (rejection->param == "max_tokens") rejection->param = request.max_tokens_field;
      // The prompt a chat request sends is its messages.
      if (rejection->param == "prompt") rejection->param = "messages";
    } catch (const Error& error) {
      rejection = api::invalid_request(std::nullopt, error.what());
    }
  }
  const std::optional<RunningJob> running = co_await admit(exchange, engine_loop, rejection, job);
  if (!running) co_return;

  const ChatHeader header{api::new_id("chatcmpl-", 24), unix_now(), settings_.served_model_name};
  // Calls are looked for only when the request offers tools.
  const chat::ToolCallFormat format = request.tools.is_null()
                                          ? chat::ToolCallFormat::none
                                          : chat_template_->tool_call_format();
  if (request.sampling.stream) {
    ChatEvents events(header, format, request.sampling.include_usage, request.sampling.logprobs >= 0);
    co_await stream_job(exchange, *running, events);
    co_return;
  }
  const std::optional<FinishedJob> finished = co_await collect_job(exchange, *running);
  if (!finished) co_return;
  const CompletionEnd& end = finished->end;
  if (end.error) {
    co_await exchange.respond(error_response(http_request, *end.error));
    co_return;
  }
  const std::string reply = whole_reply(header, *finished, format, request.sampling.logprobs >= 0);
  co_await exchange.respond(http::make_response(http_request, bhttp::status::ok, reply));
}

}  // namespace tandem
