// The request fields that ask for logprobs and echo, on both routes.
//
// /v1/completions: `logprobs` (an integer 0..kMaxTopLogprobs: each token's
// logprob and that many alternatives) and `echo` (the prompt comes back
// before the completion, with its tokens' logprobs when logprobs is set);
// max_tokens 0 is allowed only with echo (scoring a prompt, as
// lm-evaluation-harness does). /v1/chat/completions: `logprobs` (a boolean)
// and `top_logprobs` (0..kMaxTopLogprobs, only with logprobs true).
// Each throws ApiError naming the field.
#pragma once

#include "coordinator/api/completion_request.h"

namespace tandem::api {

void read_completion_logprobs(const Json& value, const RequestLimits& limits, CompletionRequest& request);
void read_echo(const Json& value, const RequestLimits& limits, CompletionRequest& request);
// After every field is read: max_tokens 0 needs echo.
void check_echo_and_max_tokens(const CompletionRequest& request);

// Chat's pair, from the body's object (either may be absent or null): sets
// request.logprobs to top_logprobs (0 when absent) when logprobs is true.
void read_chat_logprobs(const Json& root, CompletionRequest& request);

}  // namespace tandem::api
