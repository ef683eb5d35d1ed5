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

// The chat stream: one ChatChunker per choice (each parses its own tool
// calls), one usage chunk for all.
class ChatEvents final : public EventFormat {
 public:
  ChatEvents(const ChatHeader& header, chat::ToolCallFormat format, bool include_usage, int choices,
             bool logprobs)
      : header_(header), include_usage_(include_usage) {
    for (int i = 0; i < choices; ++i)
      chunkers_.emplace_back(header, format, include_usage, i, logprobs);
  }
  std::vector<std::string> opening(int index) override { return chunker(index).opening(); }
  std::vector<std::string> text(int index, const std::string& piece,
                                std::vector<api::LogprobEntry> logprobs) override {
    return chunker(index).text(piece, std::move(logprobs));
  }
  std::vector<std::string> finish(int index, const CompletionEnd& end) override {
    return chunker(index).finish(reply_end(end));
  }
  std::vector<std::string> last(const std::vector<CompletionEnd>& ends) override {
    if (!include_usage_) return {};
    const RequestTotals totals = request_totals(ends, static_cast<int>(ends.size()));
    return {chat::chat_usage_chunk_json(header_, totals.usage, totals.speculation)};
  }

 private:
  chat::ChatChunker& chunker(int index) { return chunkers_[static_cast<size_t>(index)]; }

  ChatHeader header_;
  bool include_usage_;
  std::vector<chat::ChatChunker> chunkers_;
};

}  // namespace

asio::awaitable<void> ApiService::chat(http::Exchange& exchange) {
  const http::Request& http_request = exchange.request();
  std::optional<api::ApiError> rejection;
  EngineLoop* engine_loop = serving_engine_loop(rejection);
  chat::ChatRequest request;
  std::vector<CompletionJob> jobs;
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
      jobs = choice_jobs(request.sampling, {std::move(prompt)}, request.sampling.n);
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
  const std::optional<RunningJobs> running = co_await admit(exchange, engine_loop, rejection, jobs);
  if (!running) co_return;

  const ChatHeader header{api::new_id("chatcmpl-", 24), unix_now(), settings_.served_model_name};
  // Calls are looked for only when the request offers tools.
  const chat::ToolCallFormat format = request.tools.is_null()
                                          ? chat::ToolCallFormat::none
                                          : chat_template_->tool_call_format();
  if (request.sampling.stream) {
    ChatEvents events(header, format, request.sampling.include_usage, request.sampling.n,
                      request.sampling.logprobs >= 0);
    co_await stream_jobs(exchange, *running, events);
    co_return;
  }
  const std::optional<CollectedJobs> collected = co_await collect_jobs(exchange, *running);
  if (!collected) co_return;
  if (collected->error) {
    co_await exchange.respond(error_response(http_request, *collected->error));
    co_return;
  }
  api::OrderedJson choices = api::OrderedJson::array();
  for (size_t i = 0; i < collected->jobs.size(); ++i) {
    const FinishedJob& job = collected->jobs[i];
    const api::OrderedJson logprobs = request.sampling.logprobs >= 0
                                          ? api::chat_logprobs_json(job.logprobs)
                                          : api::OrderedJson(nullptr);
    choices.push_back(
        chat::chat_reply_choice(job.text, format, job.end.finish_reason, static_cast<int>(i), logprobs));
  }
  // One prompt: its tokens counted once, however many choices.
  const RequestTotals totals = request_totals(collected->jobs, static_cast<int>(collected->jobs.size()));
  co_await exchange.respond(http::make_response(
      http_request, bhttp::status::ok,
      chat::chat_completion_json(header, std::move(choices), totals.usage, totals.speculation)));
}

}  // namespace tandem
