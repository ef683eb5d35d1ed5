// What a request must satisfy before its route runs. ApiService::handle
// checks, in this order, each refusal an OpenAI-shaped error:
//
//   1. Host names this server (server.allowed_hosts): 400 when missing, 403
//      otherwise. A page on another site that rebinds its own DNS name to
//      this machine's address (DNS rebinding) sends its own name here.
//   2. Origin, when a browser sends one, is the server's own or listed in
//      server.cors_origins: 403 otherwise. A listed origin's responses carry
//      Access-Control-Allow-Origin, and its OPTIONS preflights are answered.
//   3. the route exists (404) and takes the method (405)
//   4. the API key, when one is configured (401)
//   5. a POST body is declared JSON (415). A browser page may POST text/plain,
//      form or multipart bodies to any site without asking first; JSON it may
//      send only where a preflight allowed it.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "coordinator/api/api_error.h"
#include "coordinator/http/exchange.h"

namespace tandem::gate {

// Who may call: the configured lists in web_access.h's form.
struct Access {
  std::vector<std::string> allowed_hosts = {"127.0.0.1", "localhost", "[::1]"};
  std::vector<std::string> cors_origins;
};

// The token of an `Authorization: Bearer <token>` header: the scheme in any
// case (RFC 7235), then one or more spaces or tabs. nullopt for any other
// scheme or an empty token.
std::optional<std::string_view> bearer_token(std::string_view authorization);

// Compares in time that depends only on the lengths, so that a key cannot be
// guessed byte by byte from how fast it is refused.
bool same_secret(std::string_view given, std::string_view expected);

// Whether a Content-Type value is JSON: application/json in any case, with
// or without parameters ("application/json; charset=utf-8").
bool is_json_media_type(std::string_view content_type);

// Checks 1 and 2: the refusal, or nullopt.
std::optional<api::ApiError> refuse_caller(const http::Request& request, const Access& access);

// Whether the response must carry CORS headers: a listed origin other than
// the server's own (refuse_caller has passed).
bool is_cross_origin(const http::Request& request);

// Check 4 for a configured key.
std::optional<api::ApiError> refuse_credentials(const http::Request& request, std::string_view api_key);

// Check 5, for a route that reads a body.
std::optional<api::ApiError> refuse_body_type(const http::Request& request);

// 204 to an OPTIONS request on a route taking `method`: Allow, and for a
// cross-origin preflight the Access-Control-Allow-* headers.
http::Response preflight_response(const http::Request& request, std::string_view method);

}  // namespace tandem::gate
