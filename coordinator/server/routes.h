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
};

inline constexpr std::array kRoutes = {
    Route{"/v1/completions", boost::beast::http::verb::post},
    Route{"/v1/chat/completions", boost::beast::http::verb::post},
    Route{"/v1/models", boost::beast::http::verb::get},
    Route{"/health", boost::beast::http::verb::get},
    Route{"/ready", boost::beast::http::verb::get},
    Route{"/metrics", boost::beast::http::verb::get},
};

// The route serving `path` (without the query string), or nullptr.
inline const Route* find_route(std::string_view path) {
  for (const Route& route : kRoutes)
    if (route.path == path) return &route;
  return nullptr;
}

}  // namespace tandem
