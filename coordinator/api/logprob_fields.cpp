#include "coordinator/api/logprob_fields.h"

#include "coordinator/api/token_logprobs.h"

namespace tandem::api {
namespace {

const Json* present(const Json& root, const char* key) {
  const auto it = root.find(key);
  return it == root.end() || it->is_null() ? nullptr : &*it;
}

}  // namespace

void read_completion_logprobs(const Json& value, const RequestLimits&, CompletionRequest& request) {
  request.logprobs = static_cast<int>(read_integer(value, "logprobs", 0, kMaxTopLogprobs));
}

void read_echo(const Json& value, const RequestLimits&, CompletionRequest& request) {
  request.echo = read_bool(value, "echo");
}

void check_echo_and_max_tokens(const CompletionRequest& request) {
  if (request.max_tokens == 0 && !request.echo) {
    throw invalid_value("max_tokens", "0 is allowed only with echo: true (to score the prompt); "
                                      "ask for at least 1 token.");
  }
}

void read_chat_logprobs(const Json& root, CompletionRequest& request) {
  const Json* logprobs = present(root, "logprobs");
  const bool wanted = logprobs && read_bool(*logprobs, "logprobs");
  const Json* top = present(root, "top_logprobs");
  if (top && !wanted) {
    throw invalid_value("top_logprobs", "it needs logprobs: true. Set logprobs to true, or leave "
                                        "top_logprobs out.");
  }
  if (!wanted) return;
  request.logprobs = top ? static_cast<int>(read_integer(*top, "top_logprobs", 0, kMaxTopLogprobs)) : 0;
}

}  // namespace tandem::api
