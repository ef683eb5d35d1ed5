// coordinator/engine_loop/: the thread that runs the engine for the server.
// (The scheduling proper, admission, chunked prefill and preemption, is the
// engine's: workers/speculation/step_planner.h.) completion_stream.h is what
// this thread tells one HTTP request.
//
// EngineLoop: the engine thread between the HTTP server and the engine.
//
// HTTP threads submit() jobs and never wait for the engine; the engine thread
// loops: take new jobs into the engine, end sessions whose client left or
// whose deadline passed, run one engine step for every session at once
// (continuous batching: sessions join and leave between steps), turn new
// tokens into text (stop strings applied here, on text), publish it to each
// job's CompletionStream (with the tokens' logprobs when asked: job_text.h),
// and update the metrics. When nothing is running it
// sleeps until a job arrives.
//
// Failures are attributed: what belongs to one request (a value the engine
// refuses when it is added, its own fault inside a step, its text that
// cannot be decoded or matched) ends that request alone with an error
// naming the cause; only a step that throws (the backend, a lost rank)
// ends every request in flight, and is logged.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/tokenizer/tokenizer.h"
#include "coordinator/metrics/server_metrics.h"
#include "coordinator/engine_loop/completion_stream.h"
#include "workers/kv_cache.h"
#include "workers/speculation/speculative_engine.h"

namespace tandem {

using metrics::ServerMetrics;

using SteadyClock = std::chrono::steady_clock;

// One completion request, ready for the engine.
struct CompletionJob {
  SpeculationRequest request;             // prompt ids, sampling, stop ids, γ, drafter
  std::vector<std::string> stop_strings;  // matched on text; never emitted
  bool logprobs = false;  // publish the tokens' logprob entries with their text (job_text.h)
  bool echo = false;      // publish the prompt (and its entries) first
  std::string gamma_policy;               // as reported: "auto", "4", "off"
  SteadyClock::time_point received;
  SteadyClock::time_point deadline;
  std::shared_ptr<CompletionStream> stream;
};

struct EngineLoopOptions {
  size_t max_queued = 256;  // jobs waiting for admission; more are refused (HTTP 429)
  // Called once, from the engine thread, when a step fails because another
  // rank of the job is lost (Error(unavailable)); its requests end with 503.
  std::function<void(const std::string& why)> on_lost;
  // Where a failed step is logged (the server's log). A request's own fault
  // ends it alone and is its client's to read; only a step that fails for
  // everyone is logged.
  std::ostream* log = &std::cerr;
  // The engine's drafters, whose prefix caches (a draft model's) the draft's
  // prefix cache metrics sum.
  std::vector<const Drafter*> drafters;
};

class EngineLoop {
 public:
  // The engine and caches are driven only from the loop's thread from
  // start() on. draft_cache may be null (no draft model).
  EngineLoop(SpeculativeEngine& engine, const PagedKvCache& target_cache,
            const PagedKvCache* draft_cache, Tokenizer tokenizer, ServerMetrics& metrics,
            EngineLoopOptions options);
  ~EngineLoop();
  EngineLoop(const EngineLoop&) = delete;
  EngineLoop& operator=(const EngineLoop&) = delete;

  void start();
  // Stops the thread; sessions still in flight end as cancelled.
  void stop();

  // Any thread. False when the queue is full; the job is then untouched.
  bool submit(CompletionJob& job);
  // The jobs of one request (its choices), all or none: false, every job
  // untouched, when the queue cannot take them all.
  bool submit_all(std::vector<CompletionJob>& jobs);
  // Jobs submitted and not yet finished (queued or running).
  size_t in_flight() const { return in_flight_.load(); }
  // Ends every job now with `error` (shutdown after the grace period).
  void cancel_all(api::ApiError error);
  // For when the engine thread is stuck (inside MPI: ServerApp's watchdog)
  // and the process is about to end: ends every job submitted and not yet
  // finished with `error`, through its stream alone, from this thread. The
  // engine's sessions and the counts are left as they are.
  void abandon_all(const api::ApiError& error);

 private:
  struct Active;
  void run();
  void admit(std::deque<CompletionJob>& jobs);
  void sweep_cancelled_and_expired();
  void publish_progress();
  // Reports the end of a session the engine has already let go of.
  void end(SessionKey key, Active& active, const SpeculationStats& stats,
           const std::string& finish_reason, std::optional<api::ApiError> error = std::nullopt);
  void end_all(const std::string& finish_reason, const api::ApiError& error);
  // The step threw: every request ends with an error (503 for a lost rank).
  void fail_step(const std::string& what, bool lost);
  // One session's new text published, and its end when it ended.
  void publish(SessionKey key, Active& active, SteadyClock::time_point now);
  // Counts the step that began at `started`; its sessions' first step ends their queue time.
  void record_step(SteadyClock::time_point started);
  // A request's queue, prefill and decode times, as it ends at `now`.
  void observe_phases(const Active& active, SteadyClock::time_point now);
  void update_gauges();
  // The target's and the drafters' prefix cache counters, since last counted.
  void count_prefix_cache();

  SpeculativeEngine& engine_;
  const PagedKvCache& target_cache_;
  const PagedKvCache* draft_cache_;
  Tokenizer tokenizer_;
  ServerMetrics& metrics_;
  EngineLoopOptions options_;
  bool lost_reported_ = false;  // engine thread only
  metrics::Gauge& kv_usage_target_;
  metrics::Gauge* kv_usage_draft_;  // null without a draft cache

  std::mutex mutex_;  // guards inbox_, stopping_, cancel_all_, streams_
  std::condition_variable wake_;
  std::deque<CompletionJob> inbox_;
  // The jobs submitted, for abandon_all: each stream and its prompt's size
  // (the usage its end reports).
  struct Submitted {
    std::weak_ptr<CompletionStream> stream;
    int prompt_tokens;
  };
  std::vector<Submitted> streams_;
  bool stopping_ = false;
  std::optional<api::ApiError> cancel_all_;
  std::atomic<size_t> in_flight_{0};
  std::atomic<size_t> engine_running_{0};  // sessions decoding, as of the last step

  // Engine thread only.
  std::map<SessionKey, std::unique_ptr<Active>> active_;
  uint64_t preemptions_seen_ = 0;
  // The prefix cache counters as last counted into the metrics.
  PrefixCacheCounters target_prefix_seen_, draft_prefix_seen_;
  // Exponentially weighted sums of recent steps' seconds (busy fractions).
  double recent_step_seconds_ = 0, recent_draft_busy_ = 0, recent_target_busy_ = 0;
  double beta_sum_ = 0, beta_count_ = 0;  // over finished sessions, for the α gauge
  std::thread thread_;
};

}  // namespace tandem
