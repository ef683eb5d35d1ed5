// ApiService: the routes of the OpenAI-compatible API.
//
//   POST /v1/completions   completions, whole or streamed as server-sent events
//   POST /v1/chat/completions  chat: the messages rendered by the model's chat
//                          template, then a completion as above (chat_route.cpp)
//   GET  /v1/models        the served model
//   GET  /v1/models/{id}   the served model's object, or 404 model_not_found
//   POST /tokenize         text, or chat messages as the template renders
//                          them, to token ids (vLLM's shapes; tokenize_route.cpp)
//   POST /detokenize       token ids to text
//   GET  /health           liveness: the process answers
//   GET  /ready            readiness: models loaded and not shutting down
//   GET  /metrics          Prometheus text format
//
// Errors are OpenAI-shaped JSON. Before any route runs, request_gate.h's
// checks: the Host header, a browser's Origin, the API key when one is
// configured (/v1/*, /tokenize and /detokenize need `Authorization: Bearer
// <key>`; routes.h), a JSON body type. The service starts "loading" (so /health
// answers while checkpoints load), becomes ready once attach() hands it the
// engine loop, and refuses new completions with 503 once draining.
#pragma once

#include <atomic>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "common/tokenizer/tokenizer.h"
#include "coordinator/api/completion_request.h"
#include "coordinator/chat/chat_template.h"
#include "coordinator/http/exchange.h"
#include "coordinator/metrics/server_metrics.h"
#include "coordinator/server/job_flow.h"
#include "coordinator/server/request_gate.h"
#include "coordinator/engine_loop/engine_loop.h"
#include "workers/speculation/gamma_policy.h"

namespace tandem {

using metrics::ServerMetrics;

// What the routes learn from the loaded target model.
struct ModelFacts {
  int context_length = 0;          // tokens
  // Positions the target's KV cache holds (scheduler.kv_blocks × block_size):
  // a request needs prompt + max_tokens - 1 of them even alone. 0: unknown.
  int kv_positions = 0;
  int vocab_size = 0;
  std::vector<int32_t> stop_ids;   // end-of-sequence ids: generation stops after one
};

// What the routes need to know about the deployment.
struct ServiceSettings {
  std::string served_model_name = "tandem";
  std::optional<std::string> api_key;  // required bearer token, if any
  gate::Access access;                 // the Host and Origin headers answered
  api::RequestLimits limits;
  std::chrono::milliseconds request_timeout{600'000};
  int max_prompt_tokens = 0;  // 0: the context length - 1
  GammaPolicy gamma;              // the default speculation policy
  std::string drafter;            // the default drafter: model | ngram | none
  std::vector<std::string> drafters;  // the drafters this deployment has
  float lenience = 1.0f;
  CouplingSetting coupling = CouplingSetting::automatic;  // the deployment's sampling.coupling
};

class ApiService {
 public:
  ApiService(ServiceSettings settings, ServerMetrics& metrics);

  // Models are loaded: serve completions from now on.
  // `chat_template`: the target's (ChatTemplate::unavailable when it has none).
  void attach(EngineLoop& engine_loop, Tokenizer tokenizer, const ModelFacts& facts,
              chat::ChatTemplate chat_template = chat::ChatTemplate::unavailable(
                  "this server has no chat template loaded"));
  // Shutting down: refuse new completions (503), let running ones finish.
  void drain() { draining_.store(true); }
  bool ready() const { return engine_loop_.load() != nullptr && !draining_.load(); }

  boost::asio::awaitable<void> handle(http::Exchange& exchange);

 private:
  boost::asio::awaitable<void> complete(http::Exchange& exchange);  // completion_route.cpp
  boost::asio::awaitable<void> chat(http::Exchange& exchange);      // chat_route.cpp
  boost::asio::awaitable<void> tokenize(http::Exchange& exchange);    // tokenize_route.cpp
  boost::asio::awaitable<void> detokenize(http::Exchange& exchange);  // tokenize_route.cpp
  // GET /v1/models and /v1/models/{id}.
  http::Response models_response(const http::Request& request, std::string_view path) const;
  // The engine loop when serving; otherwise nullptr and `refusal` set (503).
  EngineLoop* serving_engine_loop(std::optional<api::ApiError>& refusal) const;
  // A completion request's prompt as ids (text tokenized with BOS as the
  // tokenizer's template says).
  std::vector<int32_t> prompt_tokens(const api::Prompt& prompt) const;
  // The most tokens (prompt and output) one request can ever hold: the
  // context, or fewer when the KV cache holds fewer.
  int request_token_limit() const;
  // The job for a parsed request and its prompt, or throws ApiError naming
  // the field (the prompt or max_tokens beyond the context or beyond what
  // the KV cache can ever hold, a drafter not deployed).
  CompletionJob make_job(const api::CompletionRequest& request, std::vector<int32_t> prompt) const;
  // The request's sequences, `per_prompt` for each prompt in order, each
  // one make_job's with its own seed (choice_jobs.cpp).
  std::vector<CompletionJob> choice_jobs(const api::CompletionRequest& request,
                                         const std::vector<std::vector<int32_t>>& prompts,
                                         int per_prompt) const;
  // Answers `rejection` when there is one; else hands `jobs` to the engine
  // loop. nullopt when the request has had its answer (a rejection, 429).
  boost::asio::awaitable<std::optional<RunningJobs>> admit(http::Exchange& exchange,
                                                           EngineLoop* engine_loop,
                                                           const std::optional<api::ApiError>& rejection,
                                                           std::vector<CompletionJob>& jobs);
  http::Response metrics_response(const http::Request& request);

  ServiceSettings settings_;
  ModelFacts model_;  // set by attach(), before engine_loop_ (release/acquire)
  ServerMetrics& metrics_;
  std::atomic<EngineLoop*> engine_loop_{nullptr};
  std::optional<Tokenizer> tokenizer_;  // set before engine_loop_ (release/acquire)
  std::optional<chat::ChatTemplate> chat_template_;  // likewise
  std::atomic<bool> draining_{false};
  int64_t created_unix_ = 0;  // reported as the model's creation time
};

// Seconds since the epoch, for "created".
int64_t unix_now();

// The bytes of an OpenAI-shaped error response.
http::Response error_response(const http::Request& request, const api::ApiError& error);

}  // namespace tandem
