// The body of POST /v1/completions: OpenAI's legacy completions request, read
// strictly into a CompletionRequest.
//
// Strict means: every field OpenAI defines is either honoured or refused with
// a 400 naming it (suffix is
// refused rather than silently ignored, since ignoring them would return
// something other than what the client asked for); unknown fields are refused
// with OpenAI's own wording. Extensions: `top_k`, `ignore_eos`, `repetition_penalty`,
// `min_p`, `min_tokens`, `stop_token_ids` (as vLLM; processing_fields.h), `cache_salt` (as
// vLLM: a string keeping the request's cached KV blocks apart) and `speculation`
// ({"gamma": 0..64 | "auto", "drafter": "model" | "ngram" | "none",
// "pipeline": bool, "coupling": "rejection" | "gumbel" | "auto"}, or false
// for no speculation; coupling_choice.h). A null field is the same as an absent one.
// Pure functions: thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "coordinator/api/api_error.h"
#include "coordinator/api/json_body.h"  // parse_request_body, for both routes
#include "coordinator/api/json_fields.h"
#include "coordinator/config/coupling_setting.h"
#include "workers/speculation/logit_processing.h"

namespace tandem {
struct DeploymentConfig;  // coordinator/config/deployment_config.h
}  // namespace tandem

namespace tandem::api {

// Defaults for absent fields and caps on present ones; the server fills these
// from its config and the served model.
struct RequestLimits {
  int default_max_tokens = 16;     // OpenAI's default for /v1/completions
  double default_temperature = 1.0;
  double default_top_p = 1.0;
  int default_top_k = 0;           // 0 = off, as SamplingParams
  int max_tokens_limit = 0;        // the largest max_tokens a request may ask for
  int max_stop_sequences = 4;      // OpenAI allows 4
  std::string served_model_name;   // the one model id this server answers to
  int vocab_size = 0;              // token ids in a prompt must be below this
};

// The limits a deployment puts on every request: its `sampling` defaults, its
// `limits` and its served model name. vocab_size is the model's, left 0.
RequestLimits request_limits_of(const DeploymentConfig& config);

// Nesting allowed in a body; the deepest legitimate completion request is 3
// levels ({"prompt": [[1, 2]]}), a chat request about 6 plus the nesting of
// its tools' JSON-schema parameters, so 32 leaves room for both.
inline constexpr int kMaxJsonDepth = 32;
// The largest fixed γ a request may ask for.
inline constexpr int kMaxRequestGamma = 64;

enum class DrafterChoice { model, ngram, none };

// γ as a request asks for it; mirrors GammaPolicy's automatic / gamma.
struct GammaChoice {
  bool automatic = false;  // "auto": the policy picks γ per step from α and c
  int gamma = 0;           // the fixed γ when not automatic (0 = plain decoding)
  bool operator==(const GammaChoice&) const = default;
};

// What the request says about speculation; nullopt = the server's default.
struct SpeculationChoice {
  std::optional<GammaChoice> gamma;
  std::optional<DrafterChoice> drafter;
  bool pipeline = true;  // false: never drafted ahead or apart (lockstep steps)
  // How tokens are drawn and drafts checked; automatic: the deployment's
  // sampling.coupling decides (coupling_choice.h resolves it).
  CouplingSetting coupling = CouplingSetting::automatic;
};

// Text to tokenize, or token ids taken as they are.
using Prompt = std::variant<std::string, std::vector<int32_t>>;

struct CompletionRequest {
  std::string model;                  // the served model name when the body omits it
  // Every prompt, in order (a list is a batch; choice_fields.h): never
  // empty, nor is any prompt.
  std::vector<Prompt> prompts;
  int n = 1;                          // choices per prompt, in [1, kMaxChoices]
  // Sequences generated per prompt, of which the n with the highest
  // cumulative logprob are returned; nullopt = n. Completions only.
  std::optional<int> best_of;
  int max_tokens = 0;                 // in [1, max_tokens_limit]; 0 only with echo
  double temperature = 1.0;           // in [0, 2]; 0 = greedy
  double top_p = 1.0;                 // in (0, 1]
  int top_k = 0;                      // >= 0; 0 = off (the body's -1 is read as 0)
  std::optional<uint64_t> seed;       // negative seeds wrap modulo 2^64
  std::vector<std::string> stop;      // non-empty strings, at most max_stop_sequences
  bool stream = false;
  bool include_usage = false;         // stream_options.include_usage (streams only)
  bool ignore_eos = false;            // extension: generate past end-of-sequence tokens
  SpeculationChoice speculation;
  // Penalties, logit_bias, min_tokens (processing_fields.h); the engine
  // fills in its masked_stop_ids and prompt_length.
  LogitProcessing processing;
  double min_p = 0.0;                 // in [0, 1]; 0 = off
  std::vector<int32_t> stop_token_ids;  // extra ids that end the completion (finish_reason stop)
  int logprobs = -1;                  // -1: none; N: each token's logprob and top N (logprob_fields.h)
  bool echo = false;                  // completions: the prompt (and its logprobs) come back first
  // vLLM's cache_salt: requests share cached KV blocks only with requests
  // of the same salt ("" = none, shared with every unsalted request).
  std::string cache_salt;
};

// Reads a request body. Throws ApiError: 400 naming the field (param) for a
// bad field, 400 with no param for a body that is not a JSON object (the
// message gives the parser's position), 404 code "model_not_found" for a
// model other than the served one.
CompletionRequest parse_completion_request(std::string_view body, const RequestLimits& limits);

// A request with the limits' defaults and no prompt.
CompletionRequest default_request(const RequestLimits& limits);

// Reads one of the fields /v1/chat/completions shares with /v1/completions
// (model, max_tokens, temperature, top_p, top_k, seed, stop, stream,
// stream_options, n, the penalties, logit_bias, min_p, min_tokens,
// stop_token_ids, user, speculation, ignore_eos, cache_salt) exactly as the completions route does; a null value changes
// nothing. Returns false, reading nothing, for any other key.
bool read_shared_field(std::string_view key, const Json& value, const RequestLimits& limits,
                       CompletionRequest& request);

// "model" / "ngram" / "none", as the request and the response spell them.
std::string_view drafter_name(DrafterChoice drafter);

}  // namespace tandem::api
