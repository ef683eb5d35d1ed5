// POST /v1/chat/completions: parse the chat request, render its messages
// with the model's chat template (parsed once, at load), tokenize the text
// with special tokens recognized and no BOS of the tokenizer's own (the
// template writes the one the model wants), and from there the very path of
// a completion given token ids (make_job, job_flow.h). Tool calls in the
// output, when the request offers tools, become message.tool_calls.
#include <algorithm>

#include "common/error.h"
#include "coordinator/chat/chat_response.h"
#include "coordinator/server/api_service.h"
#include "coordinator/server/job_flow.h"

namespace tandem {
namespace {

namespace asio = boost::asio;
namespace bhttp = boost::beast::http;

using chat::ChatHeader;
using api::OrderedJson;

// A stop, or a length end after a call was complete, is reported as the
// tool calls the client has to answer.
std::string finish_reason_of(const CompletionEnd& end, bool found_calls) {
  return found_calls ? "tool_calls" : end.finish_reason;
}

// The chat stream: the assistant's role first, then content deltas as the
// tool-call filter lets text out, each complete call as one tool_calls
// delta, then the finish and (include_usage) the usage.
class ChatEvents final : public EventFormat {
 public:
  ChatEvents(ChatHeader header, chat::ToolCallFormat format, bool include_usage)
      : header_(std::move(header)), filter_(format), include_usage_(include_usage) {}

  std::vector<std::string> opening() override {
    return {chunk(OrderedJson{{"role", "assistant"}, {"content", ""}})};
  }
  std::vector<std::string> text(const std::string& piece) override {
    return events_for(filter_.push(piece));
  }
  std::vector<std::string> end(const CompletionEnd& end) override {
    std::vector<std::string> events = events_for(filter_.finish());
    events.push_back(chat::chat_chunk_json(header_, OrderedJson::object(),
                                           finish_reason_of(end, filter_.found_calls()),
                                           include_usage_));
    if (include_usage_)
      events.push_back(chat::chat_usage_chunk_json(header_, end.usage, end.speculation));
    return events;
  }

 private:
  std::string chunk(const OrderedJson& delta) {
    return chat::chat_chunk_json(header_, delta, std::nullopt, include_usage_);
  }
  std::vector<std::string> events_for(const chat::FilteredPiece& piece) {
    std::vector<std::string> events;
    if (!piece.content.empty()) events.push_back(chunk(OrderedJson{{"content", piece.content}}));
    for (const chat::ToolCall& call : piece.calls) {
      OrderedJson calls = OrderedJson::array(
          {chat::tool_call_object(call, chat::new_tool_call_id(), calls_sent_++)});
      events.push_back(chunk(OrderedJson{{"tool_calls", std::move(calls)}}));
    }
    return events;
  }

  ChatHeader header_;
  chat::ToolCallFilter filter_;
  bool include_usage_;
  int calls_sent_ = 0;
};

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
      // No max_tokens: as far as the context goes (OpenAI's chat default).
      if (!request.max_tokens_given) {
        const int room = model_.context_length - static_cast<int>(prompt.size());
        request.sampling.max_tokens = std::max(1, std::min(settings_.limits.max_tokens_limit, room));
      }
      job = make_job(request.sampling, std::move(prompt));
    } catch (const api::ApiError& error) {
      rejection = error;
    } catch (const Error& error) {
      rejection = api::invalid_request(std::nullopt, error.what());
    }
  }
  if (rejection) {
    co_await exchange.respond(error_response(http_request, *rejection));
    co_return;
  }
  const std::optional<RunningJob> running = co_await submit_job(exchange, *engine_loop, job);
  if (!running) co_return;

  const ChatHeader header{api::new_id("chatcmpl-", 24), unix_now(), settings_.served_model_name};
  // Calls are looked for only when the request offers tools.
  const chat::ToolCallFormat format = request.tools.is_null()
                                          ? chat::ToolCallFormat::none
                                          : chat_template_->tool_call_format();
  if (request.sampling.stream) {
    ChatEvents events(header, format, request.sampling.include_usage);
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
  chat::ParsedOutput output = chat::parse_tool_calls(finished->text, format);
  OrderedJson calls = OrderedJson::array();
  for (const chat::ToolCall& call : output.calls)
    calls.push_back(chat::tool_call_object(call, chat::new_tool_call_id()));
  std::optional<std::string> content = std::move(output.content);
  if (!output.calls.empty() && content->empty()) content.reset();
  co_await exchange.respond(http::make_response(
      http_request, bhttp::status::ok,
      chat::chat_completion_json(header, content, calls,
                                 finish_reason_of(end, !output.calls.empty()), end.usage,
                                 end.speculation)));
}

}  // namespace tandem
