// The fields of a completions request that decide how many choices it has:
// `prompt` (one prompt or a list of them), `n` (choices per prompt) and
// `best_of` (sequences generated per prompt, the n most likely returned).
// Read by completion_request.cpp's field table; `n` is chat's too.
#pragma once

#include "coordinator/api/completion_request.h"

namespace tandem::api {

// At most this many prompts in one request's list.
inline constexpr int kMaxPrompts = 32;
// n and best_of are in [1, kMaxChoices].
inline constexpr int kMaxChoices = 16;
// At most this many sequences (prompts × best_of) in one request: each is an
// engine job of its own, and all must fit the queue at once.
inline constexpr int kMaxSequences = 64;

// A string, an array of token ids, or an array of strings or of token-id
// arrays (a batch). 400 naming `prompt` for an empty prompt or list, a bad
// element (`prompt[2]`, `prompt[1][3]` in the message) or a list longer
// than kMaxPrompts.
void read_prompts(const Json& value, const RequestLimits& limits, CompletionRequest& request);
void read_n(const Json& value, const RequestLimits& limits, CompletionRequest& request);
void read_best_of(const Json& value, const RequestLimits& limits, CompletionRequest& request);

// The checks across fields, once all are read: best_of >= n, no best_of > n
// when streaming (only the finished sequences can be ranked), and at most
// kMaxSequences sequences. 400 naming best_of or n.
void check_choice_counts(const CompletionRequest& request);

}  // namespace tandem::api
