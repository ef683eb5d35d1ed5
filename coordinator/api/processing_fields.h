// The request fields that ask the engine to process the target's logits
// (workers/speculation/logit_processing.h) and min_p: presence_penalty,
// frequency_penalty (OpenAI, [-2, 2]), repetition_penalty (vLLM, (0, 2]),
// logit_bias (OpenAI: {"token id": bias in [-100, 100]}, at most 300
// entries), min_p (vLLM, [0, 1]), min_tokens (vLLM, >= 0) and
// stop_token_ids (vLLM). Each reader fills its part of a CompletionRequest
// or throws a 400 naming its field; both endpoints read them
// (completion_request.cpp's field table, shared).
#pragma once

#include "coordinator/api/completion_request.h"

namespace tandem::api {

void read_presence_penalty(const Json& value, const RequestLimits& limits, CompletionRequest& request);
void read_frequency_penalty(const Json& value, const RequestLimits& limits, CompletionRequest& request);
void read_repetition_penalty(const Json& value, const RequestLimits& limits, CompletionRequest& request);
void read_logit_bias(const Json& value, const RequestLimits& limits, CompletionRequest& request);
void read_min_p(const Json& value, const RequestLimits& limits, CompletionRequest& request);
void read_min_tokens(const Json& value, const RequestLimits& limits, CompletionRequest& request);
void read_stop_token_ids(const Json& value, const RequestLimits& limits, CompletionRequest& request);

// The most stop_token_ids a request may give.
inline constexpr size_t kMaxStopTokenIds = 64;

}  // namespace tandem::api
