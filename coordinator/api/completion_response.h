// Responses of the completions API as JSON text: the whole completion, the
// server-sent-event chunks of a streamed one, and the /v1/models listing and
// model object.
//
// Shapes are OpenAI's text_completion objects, with one addition: a
// "speculation" object beside "usage" that reports how speculative decoding
// went for this request. Strings are dumped with invalid UTF-8 replaced by
// U+FFFD, so a bad byte from a tokenizer never turns into an exception here.
// Every function is thread-safe.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tandem::api {

// ordered_json keeps OpenAI's key order, which people reading streams expect.
using OrderedJson = nlohmann::ordered_json;

// How speculative decoding served one request.
struct SpeculationReport {
  int target_steps = 0;        // verification passes the request took part in
  int draft_tokens = 0;        // Σ γ drafted
  int accepted_tokens = 0;     // drafted tokens the target accepted
  double acceptance_rate = 0;  // α; a non-finite value is sent as null
  std::string gamma_policy;    // "auto" or the fixed γ, e.g. "4"
  std::string drafter;         // "model", "ngram" or "none"
  bool lossless = true;        // output has exactly the target's distribution
  std::string coupling = "rejection";  // the coupling that ran: "rejection" or "gumbel"
};

struct Usage {
  int prompt_tokens = 0;
  int completion_tokens = 0;   // total_tokens is their sum
  // Of prompt_tokens, those whose KV came from the prefix cache
  // (prompt_tokens_details.cached_tokens, as OpenAI reports it).
  int cached_tokens = 0;
};

// One choice of a whole response.
struct CompletionChoice {
  std::string text;
  std::string finish_reason;
  OrderedJson logprobs = nullptr;  // the choice's (token_logprobs.h), null when not asked for
};

// The non-streamed response: {"id", "object": "text_completion", "created",
// "model", "choices": [{"text", "index", "logprobs", "finish_reason"}],
// "usage": {prompt_tokens, completion_tokens, total_tokens, prompt_tokens_details},
// "speculation"}.
// finish_reason is "stop" (a stop sequence or token) or "length". Each
// choice's index is its position in `choices`.
std::string completion_json(std::string_view id, int64_t created_unix, std::string_view model,
                            const std::vector<CompletionChoice>& choices, const Usage& usage,
                            const SpeculationReport& speculation);
// The same with one choice.
std::string completion_json(std::string_view id, int64_t created_unix, std::string_view model,
                            std::string_view text, std::string_view finish_reason,
                            const Usage& usage, const SpeculationReport& speculation,
                            const OrderedJson& logprobs = nullptr);

// One streamed chunk: the same shape with the new text, no usage, and
// finish_reason null until the last chunk. With include_usage (the request's
// stream_options.include_usage) it carries "usage": null, as OpenAI's do.
// `index`: the choice it belongs to; `logprobs`: those of the delta's
// tokens, null when not asked for.
std::string chunk_json(std::string_view id, int64_t created_unix, std::string_view model,
                       std::string_view text_delta,
                       std::optional<std::string_view> finish_reason,
                       bool include_usage = false, int index = 0,
                       const OrderedJson& logprobs = nullptr);

// The extra chunk sent before [DONE] when stream_options.include_usage is set:
// "choices": [] with "usage" and "speculation".
std::string usage_chunk_json(std::string_view id, int64_t created_unix, std::string_view model,
                             const Usage& usage, const SpeculationReport& speculation);

// {"prompt_tokens", "completion_tokens", "total_tokens",
// "prompt_tokens_details": {"cached_tokens"}} and the
// "speculation" object, as every response of both routes carries them.
OrderedJson usage_object(const Usage& usage);
OrderedJson speculation_object(const SpeculationReport& report);

// GET /v1/models: {"object": "list", "data": [{"id", "object": "model",
// "created", "owned_by", "max_model_len"}]}.
std::string models_json(std::string_view served_name, int64_t created_unix,
                        std::string_view owned_by, int max_model_len);
// GET /v1/models/{id}: that list's one model object on its own.
std::string model_json(std::string_view served_name, int64_t created_unix,
                       std::string_view owned_by, int max_model_len);

// "data: <json>\n\n": one server-sent event.
std::string sse_event(std::string_view json);
// "data: [DONE]\n\n": the end of an OpenAI stream.
std::string sse_done();

// `prefix` followed by `length` random ASCII letters and digits. Thread-safe
// (each thread draws from its own generator).
std::string new_id(std::string_view prefix, int length);
// "cmpl-" followed by 24 of them.
std::string new_completion_id();

}  // namespace tandem::api
