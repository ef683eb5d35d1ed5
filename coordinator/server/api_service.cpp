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
                          " (routes: POST /v1/completions, POST /v1/chat/completions, GET /v1/models, /health, "
                          "/ready, /metrics)");
  }
  if (request.method() != route->method) {
    return api::method_not_allowed(std::string(path) + " accepts only " +
                                   std::string(bhttp::to_string(route->method)));
  }
  if (path.starts_with("/v1/") && api_key) {
    if (auto refusal = gate::refuse_credentials(request, *api_key)) return refusal;
  }
  if (route->method == bhttp::verb::post) return gate::refuse_body_type(request);
  return std::nullopt;
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
  } else if (path == "/v1/models") {
    if (engine_loop_.load()) {
      co_await exchange.respond(http::make_response(
          request, bhttp::status::ok,
          api::models_json(settings_.served_model_name, created_unix_, "tandem",
                           model_.context_length)));
    } else {
      co_await exchange.respond(
          error_response(request, api::unavailable("the models are still loading; see GET /ready")));
    }
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
