#include "tools/soak/traffic_mix.h"

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "tools/loadtest/completion_client.h"

namespace tandem::soak {
namespace {

using nlohmann::json;

// Uniform in [low, high] (integers) or [low, high) (reals); the soak needs
// variety, not reproducibility across standard libraries.
int uniform_int(std::mt19937_64& random, int low, int high) {
  return std::uniform_int_distribution<int>(low, high)(random);
}
double uniform_real(std::mt19937_64& random, double low, double high) {
  return std::uniform_real_distribution<double>(low, high)(random);
}

template <typename T>
const T& pick(const std::vector<T>& values, std::mt19937_64& random) {
  return values[static_cast<size_t>(uniform_int(random, 0, static_cast<int>(values.size()) - 1))];
}

json completion_body(const MixOptions& options, const std::string& prompt, int max_tokens) {
  json body = json::object();
  if (!options.model.empty()) body["model"] = options.model;
  body["prompt"] = prompt;
  body["max_tokens"] = max_tokens;
  return body;
}

json chat_body(const MixOptions& options, const std::string& prompt, int max_tokens) {
  json body = json::object();
  if (!options.model.empty()) body["model"] = options.model;
  body["messages"] = json::array({{{"role", "user"}, {"content", prompt}}});
  body["max_tokens"] = max_tokens;
  return body;
}

// Bodies that are not JSON at all, or stop half-way.
const std::vector<std::string> kMalformedJson = {
    R"({"prompt": "hello", "max_tokens": )",
    R"({"prompt": "hello",})",
    R"({"prompt": "hello" "max_tokens": 4})",
    "not json at all",
    R"([1, 2)",
    R"({"prompt": "unterminated)",
};

// Well-formed bodies with one wrong field each, every one a documented 400.
const std::vector<std::pair<std::string, std::string>> kBadParameters = {
    {"/v1/completions", R"({"prompt": "hello", "max_tokens": -1})"},
    {"/v1/completions", R"({"prompt": "hello", "max_tokens": 100000000})"},
    {"/v1/completions", R"({"prompt": "hello", "temperature": "hot"})"},
    {"/v1/completions", R"({"prompt": "hello", "top_p": 0})"},
    // Positive as a double, 0 as the engine's float: once failed every request in flight.
    {"/v1/completions", R"({"prompt": "hello", "top_p": 1e-300})"},
    {"/v1/chat/completions", R"({"messages": [{"role": "user", "content": "hi"}], "temperature": 1e-300})"},
    {"/v1/completions", R"({"prompt": "hello", "no_such_field": 1})"},
    {"/v1/completions", R"({"max_tokens": 4})"},
    {"/v1/chat/completions", R"({"messages": "hello"})"},
    {"/v1/chat/completions", R"({"messages": [{"role": "nobody", "content": "hi"}]})"},
};

// Routes the server does not have (404), or has for another method (405).
const std::vector<std::pair<std::string, std::string>> kUnknownRoutes = {
    {"POST", "/v1/no-such-route"},
    {"POST", "/v2/completions"},
    {"GET", "/v1/completions"},
    {"DELETE", "/v1/chat/completions"},
};

}  // namespace

const char* kind_name(Kind kind) {
  switch (kind) {
    case Kind::completion: return "completion";
    case Kind::completion_stream: return "completion_stream";
    case Kind::chat: return "chat";
    case Kind::chat_stream: return "chat_stream";
    case Kind::disconnect: return "disconnect";
    case Kind::bad_json: return "bad_json";
    case Kind::bad_parameter: return "bad_parameter";
    case Kind::unknown_route: return "unknown_route";
    case Kind::timeout: return "timeout";
    case Kind::burst: return "burst";
  }
  return "?";
}

bool is_bad_request(Kind kind) {
  return kind == Kind::bad_json || kind == Kind::bad_parameter || kind == Kind::unknown_route;
}

Request make_request(Kind kind, const MixOptions& options, std::mt19937_64& random) {
  require(!options.prompts.empty(), ErrorKind::invalid_argument, "the soak needs at least one prompt");
  Request request;
  request.kind = kind;
  const std::string& prompt = pick(options.prompts, random);
  const int short_tokens = uniform_int(random, 1, std::max(1, options.short_tokens));
  switch (kind) {
    case Kind::completion:
    case Kind::completion_stream:
    case Kind::burst:
      request.path = "/v1/completions";
      request.body = completion_body(options, prompt, kind == Kind::burst ? 4 : short_tokens).dump();
      request.stream = kind == Kind::completion_stream;
      break;
    case Kind::chat:
    case Kind::chat_stream:
      request.path = "/v1/chat/completions";
      request.body = chat_body(options, prompt, short_tokens).dump();
      request.stream = kind == Kind::chat_stream;
      break;
    case Kind::disconnect: {
      const bool chat = uniform_int(random, 0, 1) == 1;
      json body = chat ? chat_body(options, prompt, options.long_tokens)
                       : completion_body(options, prompt, options.long_tokens);
      body["ignore_eos"] = true;
      request.path = chat ? "/v1/chat/completions" : "/v1/completions";
      request.body = body.dump();
      request.stream = true;
      request.disconnect_after = uniform_real(random, 0.02, 0.5);
      break;
    }
    case Kind::timeout: {
      // As slow as one request can be made: every token generated, and a
      // long draft block at high temperature, most of it rejected, each step.
      json body = completion_body(options, prompt, options.long_tokens);
      body["ignore_eos"] = true;
      body["temperature"] = 2.0;
      body["speculation"] = {{"gamma", 64}};
      request.path = "/v1/completions";
      request.body = body.dump();
      request.stream = uniform_int(random, 0, 1) == 1;
      break;
    }
    case Kind::bad_json:
      request.path = uniform_int(random, 0, 1) == 1 ? "/v1/chat/completions" : "/v1/completions";
      request.body = pick(kMalformedJson, random);
      break;
    case Kind::bad_parameter: {
      const auto& [path, body] = pick(kBadParameters, random);
      request.path = path;
      request.body = body;
      break;
    }
    case Kind::unknown_route: {
      const auto& [method, path] = pick(kUnknownRoutes, random);
      request.method = method;
      request.path = path;
      if (method == "POST") request.body = completion_body(options, prompt, 1).dump();
      break;
    }
  }
  if (request.stream) request.body = loadtest::streaming_body(request.body);
  return request;
}

std::string status_class(int status) {
  if (status <= 0) return "none";
  return std::to_string(status / 100) + "xx";
}

Outcome classify(Kind kind, const loadtest::RequestRecord& record) {
  Outcome outcome;
  const int status = record.status;
  auto unexpected = [&](const std::string& why) {
    outcome.expected = false;
    outcome.why = why + (record.error.empty() ? "" : ": " + record.error);
    return outcome;
  };
  if (is_bad_request(kind)) {
    const bool right = kind == Kind::unknown_route ? (status == 404 || status == 405) : status == 400;
    if (right) return outcome;
    if (status >= 500) return unexpected("HTTP " + std::to_string(status) + " for a bad request");
    if (status == 0) return unexpected("no response to a bad request");
    return unexpected("HTTP " + std::to_string(status) + " for a bad request (expected " +
                      (kind == Kind::unknown_route ? "404 or 405)" : "400)"));
  }
  // A good request: answered, turned away as documented, timed out as
  // documented, or (disconnect) cut off by us.
  if (kind == Kind::disconnect && record.error == kDisconnectedOnPurpose) {
    if (status >= 500) return unexpected("HTTP " + std::to_string(status));
    outcome.disconnected = true;
    return outcome;
  }
  const bool deadline_event = status == 200 && !record.ok &&
                              record.error.find("request_timeout_seconds") != std::string::npos;
  if (status == 504 || deadline_event) {
    outcome.timed_out = true;
    return outcome;
  }
  if (status == 429) {
    outcome.overloaded = true;
    return outcome;
  }
  if (status == 200 && record.ok) return outcome;
  if (status == 200) return unexpected("the stream ended with an error");
  if (status == 0) return unexpected("no response");
  return unexpected("HTTP " + std::to_string(status) + " for a valid request");
}

}  // namespace tandem::soak
