// The soak's traffic: the kinds of request it sends (good and bad, streamed
// and not, cut off on purpose, made to run past the server's deadline,
// bursts over the queue), the request each kind becomes, and what answer
// each kind may get without the soak failing (classify).
//
// The expected answers are the server's documented ones (docs/serving.md,
// "Errors"): 400/404/405 for bad requests, 429 when the queue is full (the
// overload answer), 504 (or a stream's error event) past
// server.request_timeout_seconds. Any other 5xx, a good request refused, a
// bad one accepted, or no answer at all is unexpected.
#pragma once

#include <array>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "tools/loadtest/request_record.h"

namespace tandem::soak {

enum class Kind {
  completion,         // /v1/completions, a short answer in one body
  completion_stream,  // the same, streamed
  chat,               // /v1/chat/completions, one user message
  chat_stream,        // the same, streamed
  disconnect,         // a long stream the client closes part-way through
  bad_json,           // malformed JSON: expect 400
  bad_parameter,      // well-formed JSON with a wrong field: expect 400
  unknown_route,      // no such route (404) or the wrong method (405)
  timeout,            // a long request meant to run past the server's deadline: 504
  burst,              // short completions sent all at once, over the queue: 200 or 429
};
inline constexpr std::array<Kind, 10> kAllKinds = {
    Kind::completion, Kind::completion_stream, Kind::chat,          Kind::chat_stream,
    Kind::disconnect, Kind::bad_json,          Kind::bad_parameter, Kind::unknown_route,
    Kind::timeout,    Kind::burst};

const char* kind_name(Kind kind);
bool is_bad_request(Kind kind);  // bad_json, bad_parameter, unknown_route

// One request to send: method and path, the body exactly as sent, whether
// it streams (read as server-sent events) and, for disconnect, when the
// client closes its socket (seconds after sending).
struct Request {
  Kind kind = Kind::completion;
  std::string method = "POST";
  std::string path;
  std::string body;
  bool stream = false;
  double disconnect_after = 0;
};

struct MixOptions {
  std::vector<std::string> prompts;  // good requests' prompts, drawn at random; not empty
  std::string model;                 // the body's "model"; "" leaves it out
  int short_tokens = 16;             // max_tokens of good requests: 1..short_tokens
  int long_tokens = 200;             // max_tokens of disconnect and timeout requests
};

// The request of `kind`, its prompt and lengths drawn from `random`.
Request make_request(Kind kind, const MixOptions& options, std::mt19937_64& random);

// The error the client records for a request it cut off on purpose.
inline constexpr const char* kDisconnectedOnPurpose = "disconnected on purpose";

// What the soak makes of one answer.
struct Outcome {
  bool expected = true;
  bool timed_out = false;     // 504, or a stream's error event naming the deadline
  bool overloaded = false;    // 429
  bool disconnected = false;  // cut off by the client on purpose
  std::string why;            // what was unexpected, when !expected
};

// "2xx", "4xx", "5xx" (and so on) for a status, "none" for 0 (no response).
std::string status_class(int status);

// The answer `record` (its status, ok and error) judged for a request of `kind`.
Outcome classify(Kind kind, const loadtest::RequestRecord& record);

}  // namespace tandem::soak
