// Token logprobs as the API shows them: the entries a choice carries, and
// the two JSON shapes OpenAI gives them, completions' parallel lists and
// chat's list of token objects.
//
// Our tokenizer is byte-level BPE, so a token may hold part of a UTF-8
// character. An entry keeps the token's exact bytes (chat sends them as
// `bytes`); its string form is those bytes when they are valid UTF-8 and
// otherwise each byte of an invalid or cut sequence written as the four
// characters "\xHH" (as OpenAI writes such tokens). Pure functions:
// thread-safe.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "coordinator/api/completion_response.h"  // OrderedJson

namespace tandem::api {

// The most alternatives a request may ask for per token (OpenAI allows 5 on
// completions and 20 on chat; vLLM takes more). Both routes take 0..20.
inline constexpr int kMaxTopLogprobs = 20;

struct LogprobEntry {
  std::string token;              // the token's exact bytes (a special token: its text)
  std::optional<double> logprob;  // nullopt: the echoed prompt's first token (nothing before it)
  std::vector<std::pair<std::string, double>> top;  // alternatives' bytes, most likely first
  std::size_t text_offset = 0;    // where its text starts in the choice's text, in bytes
};

// The string form of a token's bytes (see above).
std::string token_string(std::string_view bytes);

// Completions: {"tokens": [str], "token_logprobs": [num|null],
// "top_logprobs": [{str: num}|null], "text_offset": [int]}. Two alternatives
// with the same string form keep the likelier one (a JSON object has one key).
OrderedJson completion_logprobs_json(const std::vector<LogprobEntry>& entries);

// Chat: {"content": [{"token", "logprob", "bytes": [int], "top_logprobs":
// [{"token", "logprob", "bytes"}]}], "refusal": null}.
OrderedJson chat_logprobs_json(const std::vector<LogprobEntry>& entries);

// Σ logprob over entries that have one.
double sum_logprobs(const std::vector<LogprobEntry>& entries);

}  // namespace tandem::api
