#include "coordinator/metrics/server_metrics.h"

#include <algorithm>
#include <vector>

#include "common/error.h"

namespace tandem::metrics {
namespace {

std::string prefixed(std::string_view name) { return std::string(kMetricPrefix) + std::string(name); }

// Bucket upper bounds, in seconds or tokens. Roughly 1-2.5-5 per decade: fine
// where people look (interactive latencies), coarse at the tails.
//
// First token: a short prompt on a warm server takes milliseconds; a long
// prefill behind a queue takes minutes.
const std::vector<double> kTimeToFirstTokenBounds = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                     0.075, 0.1,    0.15,  0.2,  0.3,   0.5,
                                                     0.75,  1,      2.5,   5,    10,    20,
                                                     40,    80,     160,   320,  640};
// Per output token: speculation can push it well under a millisecond; above a
// few seconds nobody is streaming any more.
const std::vector<double> kTimePerOutputTokenBounds = {0.0005, 0.001, 0.0025, 0.005, 0.0075, 0.01,
                                                       0.015,  0.02,  0.03,   0.04,  0.05,   0.075,
                                                       0.1,    0.15,  0.2,    0.3,   0.5,    0.75,
                                                       1,      2.5,   5};
// Whole requests: from a one-token answer to a long generation under load.
const std::vector<double> kRequestLatencyBounds = {0.01, 0.025, 0.05, 0.1, 0.25, 0.5,  1,
                                                   2.5,  5,     10,   15,  20,   30,   40,
                                                   50,   60,    120,  240, 480,  960,  1920};
// New tokens in one target pass, over the whole batch: one decode token up to
// large batched prefills.
const std::vector<double> kTargetStepTokenBounds = {1,   2,   4,    8,    16,   32,   64,
                                                    128, 256, 512,  1024, 2048, 4096, 8192};

constexpr const char* kPrefixQueriesHelp =
    "Prompt tokens looked up in the prefix cache when sessions started.";
constexpr const char* kPrefixHitsHelp =
    "Prompt tokens found in the prefix cache when sessions started (their prefill was skipped).";
constexpr const char* kCachedBlocksHelp =
    "KV cache blocks holding content kept for reuse (prefix caching), held by sessions or not.";

// Tokens in one request (prompt or output): 1 to a long context.
const std::vector<double> kRequestTokenBounds = {1,    2,    5,     10,    20,    50,
                                                 100,  200,  500,   1000,  2000,  5000,
                                                 10000, 20000, 50000, 100000, 200000};

constexpr std::string_view kAcceptedPerPositionName = "spec_decode_num_accepted_tokens_per_pos_total";
constexpr std::string_view kAcceptedPerPositionHelp =
    "Draft tokens accepted at each position of a drafted block (position 0 is the first).";

}  // namespace

ServerMetrics::ServerMetrics(std::string served_model_name)
    : model_name(std::move(served_model_name)),
      prompt_tokens(registry.counter(prefixed("prompt_tokens_total"),
                                     "Prompt tokens processed (prefilled).", with_model_name())),
      generation_tokens(registry.counter(prefixed("generation_tokens_total"),
                                         "Tokens generated and returned to clients.",
                                         with_model_name())),
      time_to_first_token(registry.histogram(prefixed("time_to_first_token_seconds"),
                                             "Time from a request's arrival to its first output token.",
                                             kTimeToFirstTokenBounds, with_model_name())),
      time_per_output_token(registry.histogram(
          prefixed("time_per_output_token_seconds"),
          "Time between output tokens after the first, averaged over each request.",
          kTimePerOutputTokenBounds, with_model_name())),
      e2e_request_latency(registry.histogram(prefixed("e2e_request_latency_seconds"),
                                             "Time from a request's arrival to its last token.",
                                             kRequestLatencyBounds, with_model_name())),
      request_queue_time(registry.histogram(
          prefixed("request_queue_time_seconds"),
          "Time from a request's arrival to the first engine step it was part of.",
          kTimeToFirstTokenBounds, with_model_name())),
      request_prefill_time(registry.histogram(
          prefixed("request_prefill_time_seconds"),
          "Time from a request's first engine step to its first output token.",
          kTimeToFirstTokenBounds, with_model_name())),
      request_decode_time(registry.histogram(
          prefixed("request_decode_time_seconds"),
          "Time from a request's first output token to its end.", kRequestLatencyBounds,
          with_model_name())),
      request_prompt_tokens(registry.histogram(prefixed("request_prompt_tokens"),
                                               "Prompt tokens of each finished request.",
                                               kRequestTokenBounds, with_model_name())),
      request_generation_tokens(registry.histogram(prefixed("request_generation_tokens"),
                                                   "Tokens generated for each finished request.",
                                                   kRequestTokenBounds, with_model_name())),
      open_connections(registry.gauge(prefixed("http_open_connections"),
                                      "HTTP connections open now.")),
      refused_connections(registry.counter(
          prefixed("http_refused_connections_total"),
          "HTTP connections answered 503 and closed because server.max_connections were open.")),
      num_requests_waiting(registry.gauge(prefixed("num_requests_waiting"),
                                          "Requests queued, not yet admitted to a batch.",
                                          with_model_name())),
      num_requests_running(registry.gauge(prefixed("num_requests_running"),
                                          "Requests admitted and being decoded.",
                                          with_model_name())),
      num_preemptions(registry.counter(prefixed("num_preemptions_total"),
                                       "Sessions preempted because KV cache blocks ran out.")),
      kv_cache_blocks_used_target(registry.gauge(prefixed("kv_cache_blocks_used"),
                                                 "KV cache blocks held by sessions.",
                                                 {{"model", "target"}})),
      kv_cache_blocks_used_draft(registry.gauge(prefixed("kv_cache_blocks_used"),
                                                "KV cache blocks held by sessions.",
                                                {{"model", "draft"}})),
      kv_cache_blocks_free_target(registry.gauge(prefixed("kv_cache_blocks_free"),
                                                 "KV cache blocks free to allocate (cached blocks no session holds included).",
                                                 {{"model", "target"}})),
      kv_cache_blocks_free_draft(registry.gauge(prefixed("kv_cache_blocks_free"),
                                                "KV cache blocks free to allocate (cached blocks no session holds included).",
                                                {{"model", "draft"}})),
      prefix_cache_queries_target(registry.counter(
          prefixed("prefix_cache_queries_total"), kPrefixQueriesHelp,
          with_model_name({{"model", "target"}}))),
      prefix_cache_queries_draft(registry.counter(
          prefixed("prefix_cache_queries_total"), kPrefixQueriesHelp,
          with_model_name({{"model", "draft"}}))),
      prefix_cache_hits_target(registry.counter(prefixed("prefix_cache_hits_total"),
                                                kPrefixHitsHelp,
                                                with_model_name({{"model", "target"}}))),
      prefix_cache_hits_draft(registry.counter(prefixed("prefix_cache_hits_total"),
                                               kPrefixHitsHelp,
                                               with_model_name({{"model", "draft"}}))),
      kv_cache_blocks_cached_target(registry.gauge(prefixed("kv_cache_blocks_cached"),
                                                   kCachedBlocksHelp, {{"model", "target"}})),
      kv_cache_blocks_cached_draft(registry.gauge(prefixed("kv_cache_blocks_cached"),
                                                  kCachedBlocksHelp, {{"model", "draft"}})),
      spec_decode_num_drafts(registry.counter(prefixed("spec_decode_num_drafts_total"),
                                              "Draft blocks verified by the target (one per session per step with gamma > 0).")),
      spec_decode_num_draft_tokens(registry.counter(prefixed("spec_decode_num_draft_tokens_total"),
                                                    "Draft tokens proposed for verification.")),
      spec_decode_num_accepted_tokens(registry.counter(
          prefixed("spec_decode_num_accepted_tokens_total"),
          "Draft tokens accepted by speculative sampling (the target's own extra token not included).")),
      spec_decode_acceptance_rate(registry.gauge(
          prefixed("spec_decode_acceptance_rate"),
          "Estimated acceptance rate alpha: the mean over draft tokens of sum(min(p, q)).")),
      spec_decode_cost_ratio(registry.gauge(
          prefixed("spec_decode_cost_ratio"),
          "Measured cost ratio c: time of one draft pass over time of one target pass.")),
      spec_decode_mean_gamma(registry.gauge(prefixed("spec_decode_mean_gamma"),
                                            "Mean draft length gamma chosen in the last engine step.")),
      spec_decode_predicted_speedup(registry.gauge(
          prefixed("spec_decode_predicted_speedup"),
          "Speed-up over plain decoding the gamma controller predicts for the last decode step: "
          "(1 - alpha^(gamma+1)) / ((1 - alpha)(gamma c + v(gamma+1))) with measured alpha, c "
          "and v, the mean over the sessions verifying.")),
      spec_decode_measured_speedup(registry.gauge(
          prefixed("spec_decode_measured_speedup"),
          "Speed-up the gamma controller measures at the current batch size: tokens per second "
          "of recent steps that drafted over recent steps that did not (0 until both are measured).")),
      target_steps(registry.counter(prefixed("target_steps_total"),
                                    "Engine steps (batched target forward passes).")),
      target_step_tokens(registry.histogram(prefixed("target_step_tokens"),
                                            "New tokens carried by one target forward pass, whole batch.",
                                            kTargetStepTokenBounds)),
      draft_seconds(registry.counter(prefixed("draft_seconds_total"),
                                     "Seconds the engine waited for drafters' proposals.")),
      target_seconds(registry.counter(
          prefixed("target_seconds_total"),
          "Seconds of target passes as the engine saw them: forward, verification and, in an "
          "MPI job, the messages to and from the target ranks.")),
      target_forward_seconds(registry.counter(
          prefixed("target_forward_seconds_total"),
          "Seconds of target forward passes, measured on target rank 0.")),
      target_communication_seconds(registry.counter(
          prefixed("target_communication_seconds_total"),
          "Seconds of target forward passes spent in tensor-parallel collectives.")),
      target_verify_seconds(registry.counter(
          prefixed("target_verify_seconds_total"),
          "Seconds target rank 0 spent after its forward passes: verifying drafts, scoring prompts.")),
      engine_step_seconds(registry.counter(prefixed("engine_step_seconds_total"),
                                           "Seconds of engine steps, wall time.")),
      draft_busy_seconds(registry.counter(
          prefixed("draft_busy_seconds_total"),
          "Seconds the draft spent drafting, hidden behind target passes or not.")),
      draft_idle_seconds(registry.counter(
          prefixed("draft_idle_seconds_total"),
          "Seconds of engine steps in which the draft had nothing to do.")),
      target_idle_seconds(registry.counter(
          prefixed("target_idle_seconds_total"),
          "Seconds of engine steps in which the target waited (for drafts, mostly).")),
      draft_busy_fraction(registry.gauge(
          prefixed("draft_busy_fraction"),
          "Share of recent engine step time the draft spent drafting.")),
      target_busy_fraction(registry.gauge(
          prefixed("target_busy_fraction"),
          "Share of recent engine step time the target spent in its passes.")),
      draft_ahead_hits(registry.counter(
          prefixed("draft_ahead_total"),
          "Blocks drafted ahead during a target pass, by whether they were verified next (hit) "
          "or dropped (miss).",
          {{"result", "hit"}})),
      draft_ahead_misses(registry.counter(
          prefixed("draft_ahead_total"),
          "Blocks drafted ahead during a target pass, by whether they were verified next (hit) "
          "or dropped (miss).",
          {{"result", "miss"}})) {
  for (std::string_view shape : {"plain", "ahead", "pingpong"}) pipeline_steps(shape);
  // Every finished_reason exists from the start, at 0, so rates over it are
  // defined before the first request of each kind ends.
  for (std::size_t i = 0; i < kFinishedReasons.size(); ++i) {
    request_success_by_reason_[i] = &registry.counter(
        prefixed("request_success_total"), "Requests finished, by why they finished.",
        with_model_name({{"finished_reason", std::string(kFinishedReasons[i])}}));
  }
  kv_cache_usage("target");
}

Labels ServerMetrics::with_model_name(Labels more) const {
  more.insert(more.begin(), {"model_name", model_name});
  return more;
}

Gauge& ServerMetrics::kv_cache_usage(std::string_view model) {
  return registry.gauge(prefixed("kv_cache_usage_perc"),
                        "Share of the KV cache's blocks held by sessions, 0 to 1.",
                        with_model_name({{"model", std::string(model)}}));
}

Counter& ServerMetrics::pipeline_steps(std::string_view shape) {
  return registry.counter(prefixed("pipeline_steps_total"),
                          "Engine steps by shape: plain (draft, then verify), ahead (drafting "
                          "the next block during verification) or pingpong (one group drafts "
                          "while the other verifies).",
                          {{"shape", std::string(shape)}});
}

Counter& ServerMetrics::requests(std::string_view route, int status) {
  require(status >= 100 && status <= 599, ErrorKind::invalid_argument,
          [&] { return "HTTP status " + std::to_string(status) + " is not in 100..599"; });
  return registry.counter(prefixed("requests_total"), "HTTP responses sent, by route and status code.",
                          {{"route", std::string(route)}, {"status", std::to_string(status)}});
}

Counter& ServerMetrics::request_success(std::string_view finished_reason) {
  const auto found = std::find(kFinishedReasons.begin(), kFinishedReasons.end(), finished_reason);
  require(found != kFinishedReasons.end(), ErrorKind::invalid_argument, [&] {
    return "finished_reason '" + std::string(finished_reason) +
           "' is not one of stop, length, context, cancelled, timeout";
  });
  return *request_success_by_reason_[static_cast<std::size_t>(found - kFinishedReasons.begin())];
}

Counter& ServerMetrics::accepted_at_position(int position) {
  std::atomic<Counter*>& slot = accepted_per_position_[static_cast<std::size_t>(position)];
  Counter* counter = slot.load(std::memory_order_acquire);
  if (counter == nullptr) {
    // Two threads may both get here; the registry hands both the same series.
    counter = &registry.counter(prefixed(kAcceptedPerPositionName), kAcceptedPerPositionHelp,
                                {{"position", std::to_string(position)}});
    slot.store(counter, std::memory_order_release);
  }
  return *counter;
}

void ServerMetrics::record_accepted_positions(int accepted, int drafted) {
  require(accepted >= 0 && accepted <= drafted, ErrorKind::invalid_argument, [&] {
    return "accepted " + std::to_string(accepted) + " of " + std::to_string(drafted) +
           " drafted tokens: need 0 <= accepted <= drafted";
  });
  const int positions = std::min(drafted, kMaxAcceptedPositions);
  for (int position = 0; position < positions; ++position) {
    Counter& counter = accepted_at_position(position);
    if (position < accepted) counter.inc();
  }
}

void ServerMetrics::record_draft(int accepted, int drafted) {
  record_accepted_positions(accepted, drafted);  // checks the arguments first
  if (drafted > 0) spec_decode_num_drafts.inc();
  spec_decode_num_draft_tokens.inc(drafted);
  spec_decode_num_accepted_tokens.inc(accepted);
}

}  // namespace tandem::metrics
