#include "coordinator/server/request_gate.h"

#include <boost/beast/core/string.hpp>

#include "coordinator/config/web_access.h"

namespace tandem::gate {
namespace {

namespace bhttp = boost::beast::http;
using boost::beast::iequals;

constexpr std::string_view kSpaces = " \t";

std::string_view trimmed(std::string_view text) {
  const std::size_t first = text.find_first_not_of(kSpaces);
  if (first == std::string_view::npos) return {};
  return text.substr(first, text.find_last_not_of(kSpaces) - first + 1);
}

std::string_view header(const http::Request& request, bhttp::field name) {
  const auto value = request[name];
  return {value.data(), value.size()};
}

// A header's value quoted back in a message, cut short if long.
std::string quoted(std::string_view value) {
  constexpr std::size_t kLongest = 100;
  return value.size() <= kLongest ? std::string(value) : std::string(value.substr(0, kLongest)) + "...";
}

api::ApiError forbidden(std::string message, std::string code) {
  return api::ApiError(403, std::move(message), "permission_error", std::nullopt, std::move(code));
}

}  // namespace

std::optional<std::string_view> bearer_token(std::string_view authorization) {
  constexpr std::string_view kScheme = "bearer";
  if (authorization.size() <= kScheme.size() ||
      !iequals(authorization.substr(0, kScheme.size()), kScheme))
    return std::nullopt;
  const std::string_view rest = authorization.substr(kScheme.size());
  // At least one space must part scheme and token ("Bearerx" is another scheme).
  if (kSpaces.find(rest.front()) == std::string_view::npos) return std::nullopt;
  const std::string_view token = trimmed(rest);
  if (token.empty()) return std::nullopt;
  return token;
}

bool same_secret(std::string_view given, std::string_view expected) {
  if (given.size() != expected.size()) return false;  // the length is not the secret
  unsigned char difference = 0;
  for (std::size_t i = 0; i < given.size(); ++i)
    difference |= static_cast<unsigned char>(given[i] ^ expected[i]);
  return difference == 0;
}

bool is_json_media_type(std::string_view content_type) {
  return iequals(trimmed(content_type.substr(0, content_type.find(';'))), "application/json");
}

std::optional<api::ApiError> refuse_caller(const http::Request& request, const Access& access) {
  const std::string_view host = header(request, bhttp::field::host);
  if (!web::host_allowed(host, access.allowed_hosts)) {
    if (host.empty()) {
      return api::invalid_request(std::nullopt, "The request has no Host header; send the name you reach "
                                                "this server by (e.g. `Host: localhost:8080`).");
    }
    return forbidden("This server does not answer to the name in the Host header, \"" + quoted(host) +
                         "\". If clients reach it by that name, list it in server.allowed_hosts.",
                     "host_not_allowed");
  }
  const std::string_view origin = header(request, bhttp::field::origin);
  if (!origin.empty() && !web::same_origin(origin, host) &&
      !web::origin_listed(origin, access.cors_origins)) {
    return forbidden("Browser pages from the Origin \"" + quoted(origin) +
                         "\" may not call this server. To allow a web UI there, list its origin in "
                         "server.cors_origins.",
                     "origin_not_allowed");
  }
  return std::nullopt;
}

bool is_cross_origin(const http::Request& request) {
  const std::string_view origin = header(request, bhttp::field::origin);
  return !origin.empty() && !web::same_origin(origin, header(request, bhttp::field::host));
}

std::optional<api::ApiError> refuse_credentials(const http::Request& request, std::string_view api_key) {
  const auto token = bearer_token(header(request, bhttp::field::authorization));
  if (token && same_secret(*token, api_key)) return std::nullopt;
  return api::unauthorized("missing or wrong API key: send the header `Authorization: Bearer <key>`");
}

std::optional<api::ApiError> refuse_body_type(const http::Request& request) {
  const std::string_view type = header(request, bhttp::field::content_type);
  if (is_json_media_type(type)) return std::nullopt;
  const std::string got = type.empty() ? "this request has no Content-Type"
                                       : "this request has `Content-Type: " + quoted(type) + "`";
  return api::ApiError(415,
                       "The request body must be JSON and say so: send the header `Content-Type: "
                       "application/json` (" + got + ").",
                       "invalid_request_error", std::nullopt, "unsupported_media_type");
}

http::Response preflight_response(const http::Request& request, std::string_view method) {
  http::Response response(bhttp::status::no_content, request.version());
  const std::string methods = std::string(method) + ", OPTIONS";
  response.set(bhttp::field::allow, methods);
  if (is_cross_origin(request)) {
    response.set(bhttp::field::access_control_allow_methods, methods);
    // What the page asks to send (the openai client adds its own x-stainless-*
    // headers), and always the two every API call may carry.
    std::string headers = "Authorization, Content-Type";
    if (const std::string_view asked = header(request, bhttp::field::access_control_request_headers);
        !asked.empty())
      headers += ", " + std::string(asked);
    response.set(bhttp::field::access_control_allow_headers, headers);
    response.set(bhttp::field::access_control_max_age, "600");
  }
  return response;
}

}  // namespace tandem::gate
