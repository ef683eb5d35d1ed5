// ServerMetrics: every metric the Tandem server reports on GET /metrics, each
// a named reference into one Registry.
//
// Names follow vLLM's (vllm:spec_decode_num_drafts becomes
// tandem_spec_decode_num_drafts_total) with two changes: the prefix is
// "tandem_", because `promtool check metrics` rejects colons in exported names
// (they are meant for recording rules), and every counter ends in _total.
//
// Thread-safety: all members are safe from any thread. The named references
// and the helpers below never take the registry's lock once a series exists,
// except requests(), which looks its series up under it.
#pragma once

#include <array>
#include <atomic>
#include <string>
#include <string_view>

#include "coordinator/metrics/registry.h"

namespace tandem::metrics {

inline constexpr std::string_view kMetricPrefix = "tandem_";

// Draft positions past this many are not counted per position (they still
// count in spec_decode_num_accepted_tokens_total).
inline constexpr int kMaxAcceptedPositions = 64;

// The finished_reason label values of request_success_total, in the words of
// the OpenAI API's finish_reason plus the server's own ends.
inline constexpr std::array<std::string_view, 6> kFinishedReasons = {
    "stop", "length", "context", "cancelled", "timeout", "error"};

struct ServerMetrics {
  // model_name: the served model's name, the model_name label of the
  // request, token and scheduler series (vLLM's label: its dashboards filter
  // by it).
  explicit ServerMetrics(std::string model_name = "tandem");
  ServerMetrics(const ServerMetrics&) = delete;
  ServerMetrics& operator=(const ServerMetrics&) = delete;

  const std::string model_name;
  // Declared before the references: every one points into it. Other parts
  // of the server may register more metrics here.
  Registry registry;

  // Requests and tokens (each labelled model_name).
  Counter& prompt_tokens;          // tandem_prompt_tokens_total
  Counter& generation_tokens;      // tandem_generation_tokens_total
  Histogram& time_to_first_token;  // tandem_time_to_first_token_seconds
  Histogram& time_per_output_token;  // tandem_time_per_output_token_seconds
  Histogram& e2e_request_latency;  // tandem_e2e_request_latency_seconds
  // A request's phases, observed when it ends: queue (arrival to its first
  // engine step), prefill (that step to its first token), decode (first
  // token to the end). A request that got no token has no prefill or decode.
  Histogram& request_queue_time;    // tandem_request_queue_time_seconds
  Histogram& request_prefill_time;  // tandem_request_prefill_time_seconds
  Histogram& request_decode_time;   // tandem_request_decode_time_seconds
  // Per request, at its end (the sums equal the _total counters above).
  Histogram& request_prompt_tokens;      // tandem_request_prompt_tokens
  Histogram& request_generation_tokens;  // tandem_request_generation_tokens
  Gauge& open_connections;         // tandem_http_open_connections
  Counter& refused_connections;    // tandem_http_refused_connections_total: over server.max_connections

  // Scheduler and KV cache.
  Gauge& num_requests_waiting;        // tandem_num_requests_waiting
  Gauge& num_requests_running;        // tandem_num_requests_running
  Counter& num_preemptions;           // tandem_num_preemptions_total
  Gauge& kv_cache_blocks_used_target;  // tandem_kv_cache_blocks_used{model="target"}
  Gauge& kv_cache_blocks_used_draft;   // tandem_kv_cache_blocks_used{model="draft"}
  Gauge& kv_cache_blocks_free_target;  // tandem_kv_cache_blocks_free{model="target"}
  Gauge& kv_cache_blocks_free_draft;   // tandem_kv_cache_blocks_free{model="draft"}
  // Prefix caching (vLLM's prefix_cache_queries and prefix_cache_hits): prompt
  // tokens looked up in a cache when a session starts, and of those found
  // cached; hits / queries is the hit rate. Labelled model_name and model.
  Counter& prefix_cache_queries_target;  // tandem_prefix_cache_queries_total{model="target"}
  Counter& prefix_cache_queries_draft;   // tandem_prefix_cache_queries_total{model="draft"}
  Counter& prefix_cache_hits_target;     // tandem_prefix_cache_hits_total{model="target"}
  Counter& prefix_cache_hits_draft;      // tandem_prefix_cache_hits_total{model="draft"}
  // Blocks whose content is indexed for reuse, held by sessions or not.
  Gauge& kv_cache_blocks_cached_target;  // tandem_kv_cache_blocks_cached{model="target"}
  Gauge& kv_cache_blocks_cached_draft;   // tandem_kv_cache_blocks_cached{model="draft"}
  // tandem_kv_cache_usage_perc{model_name, model}: the share of a cache's
  // blocks in use, 0..1 (vLLM's name, a fraction despite it). model is
  // "target" or "draft"; the draft's series exists once asked for.
  Gauge& kv_cache_usage(std::string_view model);

  // Speculation (the paper's α, c and γ) and the target passes it drives.
  Counter& spec_decode_num_drafts;           // tandem_spec_decode_num_drafts_total
  Counter& spec_decode_num_draft_tokens;     // tandem_spec_decode_num_draft_tokens_total
  Counter& spec_decode_num_accepted_tokens;  // tandem_spec_decode_num_accepted_tokens_total
  Gauge& spec_decode_acceptance_rate;        // α, tandem_spec_decode_acceptance_rate
  Gauge& spec_decode_cost_ratio;             // c, tandem_spec_decode_cost_ratio
  Gauge& spec_decode_mean_gamma;             // tandem_spec_decode_mean_gamma
  // The γ controller's predicted speed-up (Theorem 3.8 with measured α, c
  // and v(γ+1)) and the one it measures (drafting vs plain steps' rates).
  Gauge& spec_decode_predicted_speedup;      // tandem_spec_decode_predicted_speedup
  Gauge& spec_decode_measured_speedup;       // tandem_spec_decode_measured_speedup
  Counter& target_steps;                     // tandem_target_steps_total
  Histogram& target_step_tokens;             // tandem_target_step_tokens
  // Where the engine's time goes (rate() of each is a busy fraction).
  Counter& draft_seconds;                    // tandem_draft_seconds_total
  Counter& target_seconds;                   // tandem_target_seconds_total
  Counter& target_forward_seconds;           // tandem_target_forward_seconds_total
  Counter& target_communication_seconds;     // tandem_target_communication_seconds_total
  Counter& target_verify_seconds;            // tandem_target_verify_seconds_total
  // Pipelined drafting: where each side's time goes when the draft works
  // while the target verifies (workers/speculation/pipeline_policy.h).
  Counter& engine_step_seconds;   // tandem_engine_step_seconds_total: whole steps, wall time
  Counter& draft_busy_seconds;    // tandem_draft_busy_seconds_total: drafting, overlapped or not
  Counter& draft_idle_seconds;    // tandem_draft_idle_seconds_total: step time the draft waited
  Counter& target_idle_seconds;   // tandem_target_idle_seconds_total: step time the target waited
  Gauge& draft_busy_fraction;     // tandem_draft_busy_fraction: over recent steps
  Gauge& target_busy_fraction;    // tandem_target_busy_fraction: over recent steps
  Counter& draft_ahead_hits;      // tandem_draft_ahead_total{result="hit"}
  Counter& draft_ahead_misses;    // tandem_draft_ahead_total{result="miss"}
  // tandem_pipeline_steps_total{shape}: steps by shape (plain, ahead, pingpong).
  Counter& pipeline_steps(std::string_view shape);

  // tandem_requests_total{route, status}: one per HTTP response. route is the
  // matched route ("/v1/completions"), never the raw request target, so the
  // number of series stays bounded. status must be 100..599.
  Counter& requests(std::string_view route, int status);

  // tandem_request_success_total{model_name, finished_reason}: one of kFinishedReasons,
  // else an Error (invalid_argument). Lock-free.
  Counter& request_success(std::string_view finished_reason);

  // One session's verified block: `accepted` of `drafted` draft tokens kept.
  // Bumps tandem_spec_decode_num_accepted_tokens_per_pos_total for positions
  // 0..accepted-1, and makes sure positions up to drafted-1 exist (at 0) so
  // each position's acceptance rate can be read against num_drafts.
  // 0 <= accepted <= drafted, else an Error (invalid_argument).
  void record_accepted_positions(int accepted, int drafted);

  // All of one block's draft counters at once: num_drafts (when drafted > 0),
  // num_draft_tokens, num_accepted_tokens and the per-position counts.
  void record_draft(int accepted, int drafted);

  // The exposition for GET /metrics (Content-Type: kContentType).
  std::string render() const { return registry.render(); }

 private:
  Counter& accepted_at_position(int position);
  // {model_name} followed by `more`.
  Labels with_model_name(Labels more = {}) const;

  std::array<Counter*, kFinishedReasons.size()> request_success_by_reason_{};
  // Filled on first use; a series once created never moves, so a pointer
  // published here is good for the registry's life.
  std::array<std::atomic<Counter*>, kMaxAcceptedPositions> accepted_per_position_{};
};

}  // namespace tandem::metrics
