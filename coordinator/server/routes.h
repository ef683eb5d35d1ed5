// The routes the API serves, as one table: ApiService::handle looks each
// request's path up here, and so does the HTTP fuzzer (tests/fuzz/).
#pragma once

#include <array>
#include <string_view>

#include <boost/beast/http/verb.hpp>

namespace tandem {

struct Route {
  std::string_view path;
  boost::beast::http::verb method;
  // Answered only with the API key, when the deployment sets one: the model's
  // routes. /health, /ready and /metrics stay open for probes and scrapers.
  bool needs_key = true;
};

// GET /v1/models/{id}: every path under it is this one route (the id may be
// percent-encoded and hold '/', as Hugging Face names do).
inline constexpr std::string_view kModelsPrefix = "/v1/models/";

inline constexpr std::array kRoutes = {
    Route{"/v1/completions", boost::beast::http::verb::post},
    Route{"/v1/chat/completions", boost::beast::http::verb::post},
    Route{"/v1/models", boost::beast::http::verb::get},
    Route{"/v1/models/{id}", boost::beast::http::verb::get},
    Route{"/tokenize", boost::beast::http::verb::post},
    Route{"/detokenize", boost::beast::http::verb::post},
    Route{"/health", boost::beast::http::verb::get, false},
    Route{"/ready", boost::beast::http::verb::get, false},
    Route{"/metrics", boost::beast::http::verb::get, false},
};

// The route serving `path` (without the query string), or nullptr.
inline const Route* find_route(std::string_view path) {
  if (path.starts_with(kModelsPrefix) && path.size() > kModelsPrefix.size())
    path = "/v1/models/{id}";
  for (const Route& route : kRoutes)
    if (route.path == path) return &route;
  return nullptr;
}

}  // namespace tandem
