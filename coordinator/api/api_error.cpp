#include "coordinator/api/api_error.h"

#include <nlohmann/json.hpp>
#include <utility>

namespace tandem::api {

ApiError::ApiError(int status_, std::string message_, std::string type_,
                   std::optional<std::string> param_, std::optional<std::string> code_)
    : status(status_),
      message(std::move(message_)),
      type(std::move(type_)),
      param(std::move(param_)),
      code(std::move(code_)) {}

ApiError invalid_request(std::optional<std::string> param, std::string message) {
  return ApiError(400, std::move(message), "invalid_request_error", std::move(param));
}

ApiError not_found(std::string message) {
  return ApiError(404, std::move(message), "invalid_request_error");
}

ApiError method_not_allowed(std::string message) {
  return ApiError(405, std::move(message), "invalid_request_error");
}

ApiError payload_too_large(std::string message) {
  return ApiError(413, std::move(message), "invalid_request_error");
}

ApiError unauthorized(std::string message) {
  return ApiError(401, std::move(message), "authentication_error", std::nullopt,
                  "invalid_api_key");
}

ApiError rate_limited(std::string message) {
  return ApiError(429, std::move(message), "rate_limit_error", std::nullopt,
                  "rate_limit_exceeded");
}

ApiError unavailable(std::string message) {
  return ApiError(503, std::move(message), "service_unavailable");
}

ApiError timeout(std::string message) {
  return ApiError(504, std::move(message), "timeout_error");
}

ApiError internal(std::string message) {
  return ApiError(500, std::move(message), "server_error");
}

ApiError api_error_from(const Error& error) {
  switch (error.kind()) {
    case ErrorKind::invalid_argument:
    case ErrorKind::unsupported:
      return invalid_request(std::nullopt, error.what());
    case ErrorKind::not_found:
      return not_found(error.what());
    case ErrorKind::out_of_resources:
    case ErrorKind::unavailable:
      return unavailable(error.what());
    case ErrorKind::corrupt_data:
    case ErrorKind::internal:
      return internal(error.what());
  }
  return internal(error.what());  // unreachable: every kind is handled above
}

std::string error_json(const ApiError& error) {
  // ordered_json keeps OpenAI's key order; clients do not depend on it, but
  // people reading logs and diffs do.
  nlohmann::ordered_json body;
  auto& inner = body["error"];
  inner["message"] = error.message;
  inner["type"] = error.type;
  inner["param"] = error.param ? nlohmann::ordered_json(*error.param) : nullptr;
  inner["code"] = error.code ? nlohmann::ordered_json(*error.code) : nullptr;
  return body.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace tandem::api
