// POST /tokenize and POST /detokenize (api/tokenize_request.h has the
// shapes). Both use the very tokenizer the completion routes use: a text
// prompt is encoded as /v1/completions encodes one (special tokens as the
// tokenizer's template adds them, unless add_special_tokens is false), and
// messages are rendered by the chat template and encoded as
// /v1/chat/completions does (no special tokens of the tokenizer's own unless
// asked), so `count` is the prompt_tokens of the matching request. Neither
// reaches the engine: they answer on the connection's thread.
#include "common/error.h"
#include "coordinator/api/tokenize_request.h"
#include "coordinator/server/api_service.h"

namespace tandem {
namespace {

namespace asio = boost::asio;
namespace bhttp = boost::beast::http;

}  // namespace

asio::awaitable<void> ApiService::tokenize(http::Exchange& exchange) {
  const http::Request& http_request = exchange.request();
  std::optional<api::ApiError> refusal;
  std::string body;
  std::string input = "prompt";  // the field the text came from
  if (serving_engine_loop(refusal)) {
    try {
      const api::TokenizeRequest request =
          api::parse_tokenize_request(http_request.body(), settings_.limits);
      std::string text;
      if (request.prompt) {
        text = *request.prompt;
      } else {
        input = "messages";
        text = chat_template_->render(chat::parse_chat_request(request.chat_body, settings_.limits));
      }
      const std::vector<int32_t> tokens = tokenizer_->encode(text, request.add_special_tokens);
      std::optional<std::vector<std::string>> token_strs;
      if (request.return_token_strs) {
        token_strs.emplace();
        for (const int32_t id : tokens) token_strs->push_back(tokenizer_->token_text(id));
      }
      body = api::tokenize_json(tokens, model_.context_length, token_strs);
    } catch (const api::ApiError& error) {
      refusal = error;
    } catch (const Error& error) {
      // The tokenizer's own refusals (text that is not UTF-8) name the input.
      refusal = api::invalid_request(input, error.what());
    }
  }
  if (refusal) {
    co_await exchange.respond(error_response(http_request, *refusal));
  } else {
    co_await exchange.respond(http::make_response(http_request, bhttp::status::ok, std::move(body)));
  }
}

asio::awaitable<void> ApiService::detokenize(http::Exchange& exchange) {
  const http::Request& http_request = exchange.request();
  std::optional<api::ApiError> refusal;
  std::string body;
  if (serving_engine_loop(refusal)) {
    try {
      const std::vector<int32_t> tokens = api::parse_detokenize_request(
          http_request.body(), settings_.limits, tokenizer_->vocab_size());
      body = api::detokenize_json(tokenizer_->decode(tokens));
    } catch (const api::ApiError& error) {
      refusal = error;
    } catch (const Error& error) {
      refusal = api::invalid_request("tokens", error.what());
    }
  }
  if (refusal) {
    co_await exchange.respond(error_response(http_request, *refusal));
  } else {
    co_await exchange.respond(http::make_response(http_request, bhttp::status::ok, std::move(body)));
  }
}

}  // namespace tandem
