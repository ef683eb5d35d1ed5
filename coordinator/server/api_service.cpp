#include "coordinator/server/api_service.h"

#include <chrono>

#include "coordinator/api/completion_response.h"
#include "coordinator/metrics/exposition_format.h"
#include "coordinator/server/routes.h"

namespace tandem {
namespace {

namespace bhttp = boost::beast::http;

// Checks 3 to 5 of request_gate.h, for a caller that passed 1 and 2.
std::optional<api::ApiError> route_refusal(const http::Request& request, std::string_view path,
                                           const Route* route, const std::optional<std::string>& api_key) {
  if (!route) {
    return api::not_found("no route " + std::string(path) +
                          " (routes: POST /v1/completions, POST /v1/chat/completions, GET /v1/models, "
                          "GET /v1/models/{id}, POST /tokenize, POST /detokenize, /health, /ready, "
                          "/metrics)");
  }
  if (request.method() != route->method) {
    return api::method_not_allowed(std::string(path) + " accepts only " +
                                   std::string(bhttp::to_string(route->method)));
  }
  if (route->needs_key && api_key) {
    if (auto refusal = gate::refuse_credentials(request, *api_key)) return refusal;
  }
  if (route->method == bhttp::verb::post) return gate::refuse_body_type(request);
  return std::nullopt;
}

// A path segment with its %XX escapes decoded (a client may send
// "org%2Fmodel" for the id "org/model"); nullopt for a malformed escape.
std::optional<std::string> percent_decoded(std::string_view text) {
  const auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    if (i + 2 >= text.size()) return std::nullopt;
    const int high = hex(text[i + 1]), low = hex(text[i + 2]);
    if (high < 0 || low < 0) return std::nullopt;
    out += static_cast<char>(high * 16 + low);
    i += 2;
  }
  return out;
}

}  // namespace

http::Response error_response(const http::Request& request, const api::ApiError& error) {
  http::Response response =
      http::make_response(request, static_cast<bhttp::status>(error.status), api::error_json(error));
  if (error.status == 401) response.set(bhttp::field::www_authenticate, "Bearer");
  if (error.status == 429 || error.status == 503) response.set(bhttp::field::retry_after, "1");
  return response;
}

ApiService::ApiService(ServiceSettings settings, ServerMetrics& metrics)
    : settings_(std::move(settings)), metrics_(metrics),
      created_unix_(std::chrono::duration_cast<std::chrono::seconds>(
                        std::chrono::system_clock::now().time_since_epoch())
                        .count()) {}

void ApiService::attach(EngineLoop& engine_loop, Tokenizer tokenizer, const ModelFacts& facts,
                        chat::ChatTemplate chat_template) {
  model_ = facts;
  settings_.limits.vocab_size = facts.vocab_size;
  tokenizer_.emplace(std::move(tokenizer));
  chat_template_.emplace(std::move(chat_template));
  engine_loop_.store(&engine_loop);
}

http::Response ApiService::models_response(const http::Request& request,
                                           std::string_view path) const {
  if (!engine_loop_.load())
    return error_response(request, api::unavailable("the models are still loading; see GET /ready"));
  const std::string& name = settings_.served_model_name;
  if (path == "/v1/models") {
    return http::make_response(request, bhttp::status::ok,
                               api::models_json(name, created_unix_, "tandem", model_.context_length));
  }
  const std::optional<std::string> id = percent_decoded(path.substr(kModelsPrefix.size()));
  if (id != name) {
    api::ApiError error = api::not_found(
        "The model `" + id.value_or(std::string(path.substr(kModelsPrefix.size()))) +
        "` does not exist. This server serves `" + name + "` (see GET /v1/models).");
    error.code = "model_not_found";
    return error_response(request, error);
  }
  return http::make_response(request, bhttp::status::ok,
                             api::model_json(name, created_unix_, "tandem", model_.context_length));
}

http::Response ApiService::metrics_response(const http::Request& request) {
  return http::make_response(request, bhttp::status::ok, metrics_.render(),
                             metrics::kContentType);
}

boost::asio::awaitable<void> ApiService::handle(http::Exchange& exchange) {
  const http::Request& request = exchange.request();
  const std::string_view path = exchange.path();

  const Route* route = find_route(path);

  // The checks in request_gate.h's order; the first refusal is the answer.
  std::optional<api::ApiError> refusal = gate::refuse_caller(request, settings_.access);
  if (!refusal && gate::is_cross_origin(request)) {  // a listed origin: the browser may read the answer
    const auto origin = request[bhttp::field::origin];
    exchange.add_response_header(bhttp::field::access_control_allow_origin,
                                 std::string_view(origin.data(), origin.size()));
    exchange.add_response_header(bhttp::field::vary, "Origin");
  }
  const bool preflight = !refusal && route && request.method() == bhttp::verb::options;
  if (!refusal && !preflight) refusal = route_refusal(request, path, route, settings_.api_key);

  if (refusal) {
    http::Response response = error_response(request, *refusal);
    if (refusal->status == 405)
      response.set(bhttp::field::allow, std::string(bhttp::to_string(route->method)) + ", OPTIONS");
    co_await exchange.respond(std::move(response));
  } else if (preflight) {
    co_await exchange.respond(gate::preflight_response(request, bhttp::to_string(route->method)));
  } else if (path == "/v1/completions") {
    co_await complete(exchange);
  } else if (path == "/v1/chat/completions") {
    co_await chat(exchange);
  } else if (path.starts_with("/v1/models")) {
    co_await exchange.respond(models_response(request, path));
  } else if (path == "/tokenize") {
    co_await tokenize(exchange);
  } else if (path == "/detokenize") {
    co_await detokenize(exchange);
  } else if (path == "/health") {
    co_await exchange.respond(
        http::make_response(request, bhttp::status::ok, R"({"status":"ok"})"));
  } else if (path == "/ready") {
    const bool is_ready = ready();
    const char* state = is_ready ? "ready" : draining_.load() ? "shutting_down" : "loading";
    co_await exchange.respond(http::make_response(
        request, is_ready ? bhttp::status::ok : bhttp::status::service_unavailable,
        std::string(R"({"status":")") + state + "\"}"));
  } else {
    co_await exchange.respond(metrics_response(request));
  }
  // 499 (nginx's "client closed request"): the client left before any reply.
  // Unknown paths share one label, so clients cannot grow the series.
  const int status = exchange.status() != 0 ? exchange.status() : 499;
  metrics_.requests(route ? route->path : "other", status).inc();
}

}  // namespace tandem
