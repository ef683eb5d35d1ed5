// ApiError: an HTTP error in OpenAI's wire shape, and the factories for each
// status the server returns.
//
// The request parsers throw ApiError by value; the HTTP layer catches it (by
// const reference, before std::exception, which it also derives from) and
// answers with `status` and error_json(error). Its shape is OpenAI's, so that
// OpenAI clients raise their usual exception types:
//   {"error": {"message": "...", "type": "...", "param": "..."|null, "code": "..."|null}}
// Not an Error (common/error.h) on purpose: a tandem::Error says what went
// wrong inside Tandem, an ApiError what the client is told;
// api_error_from() converts at the boundary.
#pragma once

#include <exception>
#include <optional>
#include <string>

#include "common/error.h"

namespace tandem::api {

struct ApiError : std::exception {
  ApiError(int status, std::string message, std::string type,
           std::optional<std::string> param = std::nullopt,
           std::optional<std::string> code = std::nullopt);

  const char* what() const noexcept override { return message.c_str(); }

  int status;                         // HTTP status code
  std::string message;                // for people: what was wrong and what to do
  std::string type;                   // OpenAI's error class, e.g. "invalid_request_error"
  std::optional<std::string> param;   // the request field at fault, if one is
  std::optional<std::string> code;    // a stable machine-readable code, if any
};

// 400 invalid_request_error naming `param` (nullopt when no one field is at fault).
ApiError invalid_request(std::optional<std::string> param, std::string message);
// 404 invalid_request_error (OpenAI reports unknown models and routes so).
ApiError not_found(std::string message);
// 405 invalid_request_error.
ApiError method_not_allowed(std::string message);
// 413 invalid_request_error.
ApiError payload_too_large(std::string message);
// 401 authentication_error, code "invalid_api_key".
ApiError unauthorized(std::string message);
// 429 rate_limit_error, code "rate_limit_exceeded".
ApiError rate_limited(std::string message);
// 503 service_unavailable.
ApiError unavailable(std::string message);
// 504 timeout_error.
ApiError timeout(std::string message);
// 500 server_error.
ApiError internal(std::string message);

// The ApiError a tandem::Error escaping into the HTTP layer becomes:
// the caller's fault (invalid_argument, unsupported) is a 400, a missing thing
// a 404, exhausted resources a 503, anything else a 500.
ApiError api_error_from(const Error& error);

// {"error":{"message":...,"type":...,"param":...|null,"code":...|null}}, keys in
// OpenAI's order. Never throws on bad UTF-8 in the message (replaced by U+FFFD).
std::string error_json(const ApiError& error);

}  // namespace tandem::api
