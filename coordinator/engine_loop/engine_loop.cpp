#include "coordinator/engine_loop/engine_loop.h"

#include <algorithm>

#include "common/error.h"
#include "common/log_line.h"
#include "coordinator/engine_loop/job_text.h"

namespace tandem {
namespace {

double seconds_between(SteadyClock::time_point from, SteadyClock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

// The share of a cache's blocks in use, 0..1.
double usage_fraction(const PagedKvCache& cache) {
  const double blocks = cache.num_blocks();
  return blocks > 0 ? cache.used_blocks() / blocks : 0;
}

// The OpenAI finish_reason for how the engine ended a session.
std::string finish_reason_text(FinishReason reason) {
  switch (reason) {
    case FinishReason::stop:
      return "stop";
    case FinishReason::length:
    case FinishReason::context:
      return "length";
    case FinishReason::cancelled:
      return "cancelled";
    case FinishReason::failed:
      return "error";
    case FinishReason::running:
      break;
  }
  return "unknown";
}

// The engine's error for one request as its client gets it. The engine's
// messages for a refused value start with the field's name ("top_p: ..."),
// which becomes the error's param.
api::ApiError request_error(const Error& error) {
  api::ApiError reply = api::api_error_from(error);
  if (reply.status != 400) return reply;
  const std::string_view message = error.what();
  const size_t colon = message.find(": ");
  const std::string_view field = message.substr(0, colon);
  const bool is_field = colon != std::string_view::npos && !field.empty() &&
                        std::all_of(field.begin(), field.end(), [](char c) {
                          return (c >= 'a' && c <= 'z') || c == '_' || c == '.';
                        });
  if (is_field) reply.param = std::string(field);
  return reply;
}

}  // namespace

// A job the engine is working on, with its text state.
struct EngineLoop::Active {
  CompletionJob job;
  JobText text;
  // When the first engine step it was part of began (the end of its queue time).
  std::optional<SteadyClock::time_point> scheduled;
  std::optional<SteadyClock::time_point> first_token;

  Active(CompletionJob j, const Tokenizer& tokenizer)
      : job(std::move(j)),
        text(tokenizer, job.stop_strings, job.request.prompt, job.echo, job.logprobs) {}

  void publish(JobText::Piece piece) {
    job.stream->publish(std::move(piece.text), std::move(piece.logprobs));
  }
};

EngineLoop::EngineLoop(SpeculativeEngine& engine, const PagedKvCache& target_cache,
                     const PagedKvCache* draft_cache, Tokenizer tokenizer,
                     ServerMetrics& metrics, EngineLoopOptions options)
    : engine_(engine), target_cache_(target_cache), draft_cache_(draft_cache),
      tokenizer_(std::move(tokenizer)), metrics_(metrics), options_(options),
      kv_usage_target_(metrics.kv_cache_usage("target")),
      kv_usage_draft_(draft_cache ? &metrics.kv_cache_usage("draft") : nullptr) {}

EngineLoop::~EngineLoop() { stop(); }

void EngineLoop::start() {
  update_gauges();  // /metrics shows the idle state before the first request
  thread_ = std::thread([this] { run(); });
}

void EngineLoop::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool EngineLoop::submit(CompletionJob& job) {
  std::vector<CompletionJob> one;
  one.push_back(std::move(job));
  if (submit_all(one)) return true;
  job = std::move(one.front());
  return false;
}

bool EngineLoop::submit_all(std::vector<CompletionJob>& jobs) {
  {
    std::lock_guard lock(mutex_);
    // Waiting = submitted, not yet running: the inbox plus the engine's queue.
    if (stopping_ || in_flight_.load() + jobs.size() > options_.max_queued + engine_running_.load())
      return false;
    std::erase_if(streams_, [](const Submitted& s) { return s.stream.expired(); });
    for (CompletionJob& job : jobs) {
      streams_.push_back({job.stream, static_cast<int>(job.request.prompt.size())});
      inbox_.push_back(std::move(job));
    }
    in_flight_.fetch_add(jobs.size());
  }
  wake_.notify_one();
  return true;
}

void EngineLoop::cancel_all(api::ApiError error) {
  {
    std::lock_guard lock(mutex_);
    cancel_all_ = std::move(error);
  }
  wake_.notify_all();
}

void EngineLoop::abandon_all(const api::ApiError& error) {
  std::lock_guard lock(mutex_);
  for (const Submitted& submitted : streams_) {
    if (const std::shared_ptr<CompletionStream> stream = submitted.stream.lock()) {
      CompletionEnd end;
      end.finish_reason = "error";
      end.error = error;
      end.usage.prompt_tokens = submitted.prompt_tokens;  // what the request log reports
      stream->finish(std::move(end));  // a stream that already ended keeps its end
    }
  }
}

void EngineLoop::run() {
  for (;;) {
    std::deque<CompletionJob> arrived;
    std::optional<api::ApiError> cancel_all;
    bool stopping = false;
    {
      std::unique_lock lock(mutex_);
      // Sleep only when the engine has nothing to do.
      wake_.wait(lock, [&] {
        return stopping_ || cancel_all_ || !inbox_.empty() || !active_.empty();
      });
      arrived.swap(inbox_);
      cancel_all.swap(cancel_all_);
      stopping = stopping_;
    }
    admit(arrived);
    if (stopping && !cancel_all) cancel_all = api::unavailable("the server is shutting down");
    if (cancel_all) end_all("cancelled", *cancel_all);
    if (stopping) return;

    sweep_cancelled_and_expired();
    update_gauges();
    if (active_.empty()) continue;
    const auto step_started = SteadyClock::now();
    try {
      engine_.step();
    } catch (const Error& error) {
      fail_step(error.what(), error.kind() == ErrorKind::unavailable);
      continue;
    } catch (const std::exception& error) {
      fail_step(error.what(), false);
      continue;
    }
    record_step(step_started);
    update_gauges();  // before publishing: a client that sees text sees its KV in use
    publish_progress();
    update_gauges();
  }
}

void EngineLoop::fail_step(const std::string& what, bool lost) {
  // A request's own faults end it alone inside the step (the engine's
  // SessionFault), so a step that throws failed for everyone: no session
  // is left in a state we can trust. A lost rank is the server's end (503,
  // and the owner is told); anything else is a bug, and new requests are
  // still served.
  log_line(*options_.log, "engine step failed, ending all ", active_.size(),
           " requests in flight: ", what);
  if (!lost) {
    end_all("error", api::internal("engine step failed: " + what));
    return;
  }
  end_all("error", api::unavailable(what));
  if (options_.on_lost && !lost_reported_) options_.on_lost(what);
  lost_reported_ = true;
}

void EngineLoop::end_all(const std::string& finish_reason, const api::ApiError& error) {
  while (!active_.empty()) {
    auto it = active_.begin();
    const SpeculationResult taken = engine_.take(it->first);
    end(it->first, *it->second, taken.stats, finish_reason, error);
  }
}

void EngineLoop::admit(std::deque<CompletionJob>& jobs) {
  for (CompletionJob& job : jobs) {
    try {
      const SessionKey key = engine_.add(job.request);
      active_.emplace(key, std::make_unique<Active>(std::move(job), tokenizer_));
    } catch (const Error& error) {
      // The HTTP side checked the request; what the engine still refuses
      // (its message names the field) is reported the same way.
      CompletionEnd end;
      end.finish_reason = "error";
      end.error = request_error(error);
      job.stream->finish(std::move(end));
      in_flight_.fetch_sub(1);
    }
  }
}

void EngineLoop::sweep_cancelled_and_expired() {
  const auto now = SteadyClock::now();
  for (auto it = active_.begin(); it != active_.end();) {
    Active& active = *it->second;
    const SessionKey key = it->first;
    ++it;  // end() erases
    if (active.job.stream->cancelled()) {
      const SpeculationResult taken = engine_.take(key);  // frees its KV blocks now
      end(key, active, taken.stats, "cancelled");
    } else if (now >= active.job.deadline) {
      const SpeculationResult taken = engine_.take(key);
      end(key, active, taken.stats, "timeout",
          api::timeout("the request ran past its deadline of server.request_timeout_seconds"));
    }
  }
}

void EngineLoop::publish_progress() {
  const auto now = SteadyClock::now();
  for (auto it = active_.begin(); it != active_.end();) {
    Active& active = *it->second;
    const SessionKey key = it->first;
    ++it;  // publish() may end it
    try {
      publish(key, active, now);
    } catch (const std::exception& error) {
      // Its own text (decoding its tokens, matching its stop strings) failed:
      // it ends alone.
      if (!active_.count(key)) continue;  // it had ended already
      SpeculationStats stats;
      try {
        stats = engine_.take(key).stats;
      } catch (const Error&) {
        // The engine had let go of it already.
      }
      end(key, active, stats, "error",
          api::internal(std::string("this request's output could not be turned into text: ") +
                        error.what()));
    }
  }
}

void EngineLoop::publish(SessionKey key, Active& active, SteadyClock::time_point now) {
  // The text work may throw (publish_progress then ends this request
  // alone). Entries that come only with take()'s result are made after it.
  const std::vector<int32_t>& tokens = engine_.output(key);
  if (tokens.size() > active.text.tokens_seen() && !active.first_token) {
    active.first_token = now;
    metrics_.time_to_first_token.observe(seconds_between(active.job.received, now));
  }
  if (active.text.push(tokens)) {
    const SpeculationResult taken = engine_.take(key);
    active.publish(active.text.take_last(taken));
    end(key, active, taken.stats, "stop");
    return;
  }
  // The scores so far, so that text streams with its tokens' logprobs.
  active.publish(active.text.take(&engine_.output_logprobs(key), &engine_.prompt_logprobs(key)));
  if (!engine_.finished(key)) return;
  if (engine_.finish_reason(key) == FinishReason::failed) {  // its own fault, found in the step
    const SpeculationResult result = engine_.take(key);
    end(key, active, result.stats, "error",
        result.error ? request_error(*result.error)
                     : api::internal("the engine ended this request with no reason"));
    return;
  }
  const bool stopped = active.text.finish();
  const SpeculationResult result = engine_.take(key);
  active.publish(active.text.take_last(result));
  end(key, active, result.stats, stopped ? "stop" : finish_reason_text(result.finish));
}

void EngineLoop::end(SessionKey key, Active& active, const SpeculationStats& stats,
                    const std::string& finish_reason, std::optional<api::ApiError> error) {
  const auto now = SteadyClock::now();
  CompletionEnd end;
  end.finish_reason = finish_reason;
  end.error = std::move(error);
  end.usage.prompt_tokens = static_cast<int>(active.job.request.prompt.size());
  end.usage.completion_tokens = static_cast<int>(active.text.tokens_seen());
  end.usage.cached_tokens = stats.cached_tokens;
  if (active.job.logprobs) end.cumulative_logprob = active.text.cumulative_logprob();
  end.speculation.target_steps = stats.target_steps;
  end.speculation.draft_tokens = stats.draft_tokens;
  end.speculation.accepted_tokens = stats.accepted_tokens;
  end.speculation.acceptance_rate = stats.alpha();  // α: the mean of Σ min(p, q) over drafts
  end.speculation.gamma_policy = active.job.gamma_policy;
  end.speculation.drafter = active.job.request.drafter;
  end.speculation.lossless = active.job.request.lenience >= 1.0f;
  end.speculation.coupling = coupling_name(active.job.request.sampling.coupling);
  if (active.first_token)
    end.time_to_first_token = seconds_between(active.job.received, *active.first_token);
  beta_sum_ += stats.beta_sum;
  beta_count_ += stats.beta_count;

  metrics_.prompt_tokens.inc(end.usage.prompt_tokens);
  metrics_.generation_tokens.inc(end.usage.completion_tokens);
  metrics_.request_success(finish_reason).inc();
  metrics_.e2e_request_latency.observe(seconds_between(active.job.received, now));
  const size_t tokens = active.text.tokens_seen();
  if (active.first_token && tokens > 1)
    metrics_.time_per_output_token.observe(seconds_between(*active.first_token, now) /
                                                   static_cast<double>(tokens - 1));
  observe_phases(active, now);
  metrics_.request_prompt_tokens.observe(end.usage.prompt_tokens);
  metrics_.request_generation_tokens.observe(end.usage.completion_tokens);

  active.job.stream->finish(std::move(end));
  active_.erase(key);
  in_flight_.fetch_sub(1);
}

void EngineLoop::observe_phases(const Active& active, SteadyClock::time_point now) {
  // Never scheduled (cancelled or timed out in the queue): all of it was queue.
  const SteadyClock::time_point scheduled = active.scheduled.value_or(now);
  metrics_.request_queue_time.observe(seconds_between(active.job.received, scheduled));
  if (!active.first_token) return;
  metrics_.request_prefill_time.observe(seconds_between(scheduled, *active.first_token));
  metrics_.request_decode_time.observe(seconds_between(*active.first_token, now));
}

void EngineLoop::record_step(SteadyClock::time_point started) {
  const StepReport& step = engine_.last_step();
  for (const auto& session : step.sessions) {
    if (session.gamma > 0) metrics_.record_draft(session.accepted, session.gamma);
    const auto active = active_.find(session.key);
    if (active != active_.end() && !active->second->scheduled) active->second->scheduled = started;
  }
  metrics_.target_steps.inc();
  metrics_.target_step_tokens.observe(step.target_tokens);
  metrics_.draft_seconds.inc(step.draft_seconds);
  metrics_.target_seconds.inc(step.target_seconds);
  metrics_.target_forward_seconds.inc(step.forward_seconds);
  metrics_.target_communication_seconds.inc(step.communication_seconds);
  metrics_.target_verify_seconds.inc(step.verify_seconds);
  metrics_.spec_decode_mean_gamma.set(step.mean_gamma);
  // Each set only when the step says something: a prefill-only step
  // predicts nothing, and the measurement needs both kinds of steps.
  if (step.predicted_speedup > 0) metrics_.spec_decode_predicted_speedup.set(step.predicted_speedup);
  if (step.measured_speedup > 0) metrics_.spec_decode_measured_speedup.set(step.measured_speedup);
  metrics_.engine_step_seconds.inc(step.step_seconds);
  metrics_.draft_busy_seconds.inc(step.draft_busy_seconds);
  metrics_.draft_idle_seconds.inc(std::max(0.0, step.step_seconds - step.draft_busy_seconds));
  metrics_.target_idle_seconds.inc(std::max(0.0, step.step_seconds - step.target_seconds));
  metrics_.draft_ahead_hits.inc(step.ahead_hits);
  metrics_.draft_ahead_misses.inc(step.ahead_misses);
  metrics_.pipeline_steps(step_shape_name(step.shape)).inc();
  // Busy fractions over recent steps: exponentially weighted sums, so the
  // gauges follow load changes within a few dozen steps.
  constexpr double kKeep = 0.95;
  recent_step_seconds_ = kKeep * recent_step_seconds_ + step.step_seconds;
  recent_draft_busy_ = kKeep * recent_draft_busy_ + step.draft_busy_seconds;
  recent_target_busy_ = kKeep * recent_target_busy_ + step.target_seconds;
  if (recent_step_seconds_ > 0) {
    metrics_.draft_busy_fraction.set(std::min(1.0, recent_draft_busy_ / recent_step_seconds_));
    metrics_.target_busy_fraction.set(std::min(1.0, recent_target_busy_ / recent_step_seconds_));
  }
  const uint64_t preemptions = engine_.preemptions();
  metrics_.num_preemptions.inc(static_cast<double>(preemptions - preemptions_seen_));
  preemptions_seen_ = preemptions;
}

void EngineLoop::update_gauges() {
  engine_running_.store(engine_.running());
  metrics_.num_requests_running.set(static_cast<double>(engine_.running()));
  // Waiting: submitted and not yet running (the engine's queue and the inbox).
  metrics_.num_requests_waiting.set(
      static_cast<double>(in_flight_.load() - std::min(in_flight_.load(), engine_.running())));
  metrics_.kv_cache_blocks_used_target.set(target_cache_.used_blocks());
  metrics_.kv_cache_blocks_cached_target.set(target_cache_.cached_blocks());
  metrics_.kv_cache_blocks_free_target.set(target_cache_.free_blocks());
  kv_usage_target_.set(usage_fraction(target_cache_));
  if (draft_cache_) {
    metrics_.kv_cache_blocks_used_draft.set(draft_cache_->used_blocks());
    metrics_.kv_cache_blocks_free_draft.set(draft_cache_->free_blocks());
    metrics_.kv_cache_blocks_cached_draft.set(draft_cache_->cached_blocks());
    kv_usage_draft_->set(usage_fraction(*draft_cache_));
  }
  if (beta_count_ > 0) metrics_.spec_decode_acceptance_rate.set(beta_sum_ / beta_count_);
  metrics_.spec_decode_cost_ratio.set(engine_.cost_ratio(engine_.drafter_names().front()));
  count_prefix_cache();
}

void EngineLoop::count_prefix_cache() {
  // The caches count from their start; the metrics get what is new.
  const auto count = [](const PrefixCacheCounters& now, PrefixCacheCounters& seen,
                        metrics::Counter& queries, metrics::Counter& hits) {
    if (now.queries >= seen.queries) queries.inc(static_cast<double>(now.queries - seen.queries));
    if (now.hits >= seen.hits) hits.inc(static_cast<double>(now.hits - seen.hits));
    seen = now;
  };
  count(engine_.target_prefix_counters(), target_prefix_seen_,
        metrics_.prefix_cache_queries_target, metrics_.prefix_cache_hits_target);
  PrefixCacheCounters draft;
  for (const Drafter* drafter : options_.drafters) {
    const PrefixCacheCounters own = drafter->prefix_counters();
    draft.queries += own.queries;
    draft.hits += own.hits;
  }
  count(draft, draft_prefix_seen_, metrics_.prefix_cache_queries_draft,
        metrics_.prefix_cache_hits_draft);
}

}  // namespace tandem
