// tandem::Error and its kinds: the one exception type library code throws.
//
// Library code never calls exit() or abort(): a bad request, checkpoint or
// config raises an Error whose message says what was wrong and what to do
// next. The kind decides how a boundary reports it (an HTTP status, a CLI exit
// code) without parsing the message.
#pragma once

#include <concepts>
#include <stdexcept>
#include <string>

namespace tandem {

enum class ErrorKind {
  invalid_argument,  // the caller's input is wrong (HTTP 400)
  not_found,         // a file, tensor, model or route does not exist
  corrupt_data,      // a file exists but its bytes are not what they claim
  unsupported,       // well-formed, but not something Tandem implements
  out_of_resources,  // KV blocks, memory or queue slots ran out
  unavailable,       // another rank of the job stopped answering (HTTP 503)
  internal,          // a bug in Tandem
};

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message)
      : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

// Throws Error(kind, message) when condition is false. For checks at the
// boundaries where data enters (files, requests, configs), not for asserts.
inline void require(bool condition, ErrorKind kind, const std::string& message) {
  if (!condition) throw Error(kind, message);
}

// The same, with the message built only on failure: for checks on hot paths
// (every token of every step), where formatting a string each time would
// cost more than the check. require(ok, kind, [&] { return "..." + ...; }).
template <std::invocable MakeMessage>
inline void require(bool condition, ErrorKind kind, MakeMessage&& make_message) {
  if (!condition) throw Error(kind, make_message());
}

}  // namespace tandem
