#include "coordinator/server/job_flow.h"

#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "coordinator/api/choices.h"
#include <iterator>

#include "coordinator/api/completion_response.h"
#include "coordinator/server/api_service.h"

namespace tandem {
namespace {

namespace asio = boost::asio;

// How often a waiting request checks whether its client is still there.
constexpr std::chrono::milliseconds kPeerCheckInterval{50};

// Sleeps until woken by the engine thread or the interval passes.
asio::awaitable<void> wait_for_news(asio::steady_timer& timer) {
  timer.expires_after(kPeerCheckInterval);
  boost::system::error_code ignored;  // operation_aborted: woken early
  co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
}

// Writes each payload as one event; false once the client is gone.
asio::awaitable<bool> write_events(http::Exchange& exchange, const std::vector<std::string>& payloads) {
  for (const std::string& payload : payloads) {
    if (!co_await exchange.stream_write(api::sse_event(payload))) co_return false;
  }
  co_return true;
}

}  // namespace

void record_job_end(http::Exchange& exchange, const CompletionEnd& end) {
  http::GenerationRecord job;
  job.prompt_tokens = end.usage.prompt_tokens;
  job.completion_tokens = end.usage.completion_tokens;
  job.time_to_first_token = end.time_to_first_token;
  job.drafted_tokens = end.speculation.draft_tokens;
  job.accepted_tokens = end.speculation.accepted_tokens;
  exchange.record().add_generation(job);
  // A server-side failure's cause is logged (a client's own 4xx is its to read);
  // after a stream's 200 this is the only trace of it in the log.
  if (end.error && end.error->status >= 500 && exchange.record().error.empty())
    exchange.record().error = end.error->message;
}

RequestTotals request_totals(const std::vector<CompletionEnd>& ends, int per_prompt) {
  std::vector<api::Usage> usages;
  std::vector<api::SpeculationReport> reports;
  for (const CompletionEnd& end : ends) {
    usages.push_back(end.usage);
    reports.push_back(end.speculation);
  }
  return {api::total_usage(usages, per_prompt), api::total_speculation(reports)};
}

RequestTotals request_totals(const std::vector<FinishedJob>& jobs, int per_prompt) {
  std::vector<CompletionEnd> ends;
  for (const FinishedJob& job : jobs) ends.push_back(job.end);
  return request_totals(ends, per_prompt);
}

void RunningJobs::cancel_all() const {
  for (const auto& stream : streams) stream->cancel();
}

asio::awaitable<std::optional<RunningJobs>> submit_jobs(http::Exchange& exchange,
                                                        EngineLoop& engine_loop,
                                                        std::vector<CompletionJob>& jobs) {
  RunningJobs running;
  running.timer = std::make_shared<asio::steady_timer>(exchange.executor());
  auto wake = [timer = running.timer, executor = exchange.executor()] {
    asio::post(executor, [timer] { timer->cancel(); });
  };
  for (CompletionJob& job : jobs) {
    job.stream = std::make_shared<CompletionStream>(wake);
    running.streams.push_back(job.stream);
  }
  if (!engine_loop.submit_all(jobs)) {
    const std::string what = jobs.size() == 1 ? "the request"
                                              : "the request's " + std::to_string(jobs.size()) +
                                                    " sequences (n × prompts)";
    co_await exchange.respond(error_response(
        exchange.request(),
        api::rate_limited("the request queue is full (scheduler.max_queued_requests) and cannot take " +
                          what + "; retry after a moment")));
    co_return std::nullopt;
  }
  co_return running;
}

asio::awaitable<std::optional<RunningJobs>> ApiService::admit(
    http::Exchange& exchange, EngineLoop* engine_loop,
    const std::optional<api::ApiError>& rejection, std::vector<CompletionJob>& jobs) {
  if (rejection) {
    co_await exchange.respond(error_response(exchange.request(), *rejection));
    co_return std::nullopt;
  }
  co_return co_await submit_jobs(exchange, *engine_loop, jobs);
}

asio::awaitable<std::optional<CollectedJobs>> collect_jobs(http::Exchange& exchange,
                                                           const RunningJobs& jobs) {
  const size_t count = jobs.streams.size();
  std::vector<std::string> texts(count);
  std::vector<std::vector<api::LogprobEntry>> logprobs(count);
  std::vector<std::optional<CompletionEnd>> ends(count);
  size_t ended = 0;
  while (true) {
    for (size_t i = 0; i < count; ++i) {
      if (ends[i]) continue;
      CompletionStream::Drained drained = jobs.streams[i]->drain();
      texts[i] += drained.text;
      logprobs[i].insert(logprobs[i].end(), std::make_move_iterator(drained.logprobs.begin()),
                         std::make_move_iterator(drained.logprobs.end()));
      if (!drained.end) continue;
      record_job_end(exchange, *drained.end);
      if (drained.end->error) {
        jobs.cancel_all();  // the request's answer is this error: the rest is wasted work
        co_return CollectedJobs{{}, std::move(drained.end->error)};
      }
      ends[i] = std::move(drained.end);
      ++ended;
    }
    if (ended == count) {
      CollectedJobs collected;
      for (size_t i = 0; i < count; ++i)
        collected.jobs.push_back(
            FinishedJob{std::move(texts[i]), std::move(logprobs[i]), std::move(*ends[i])});
      co_return collected;
    }
    if (exchange.peer_closed()) {
      jobs.cancel_all();
      co_return std::nullopt;
    }
    co_await wait_for_news(*jobs.timer);
  }
}

asio::awaitable<void> stream_jobs(http::Exchange& exchange, const RunningJobs& jobs,
                                  EventFormat& format) {
  const size_t count = jobs.streams.size();
  std::vector<std::optional<CompletionEnd>> ends(count);
  size_t ended = 0;
  bool connected = co_await exchange.begin_stream();
  for (size_t i = 0; i < count && connected; ++i)
    connected = co_await write_events(exchange, format.opening(static_cast<int>(i)));
  while (connected) {
    for (size_t i = 0; i < count && connected; ++i) {
      if (ends[i]) continue;
      const int index = static_cast<int>(i);
      CompletionStream::Drained drained = jobs.streams[i]->drain();
      if (!drained.text.empty() || !drained.logprobs.empty())
        connected = co_await write_events(
            exchange, format.text(index, drained.text, std::move(drained.logprobs)));
      if (drained.end) record_job_end(exchange, *drained.end);
      if (!drained.end || !connected) continue;
      if (drained.end->error) {
        jobs.cancel_all();
        co_await exchange.stream_write(api::sse_event(api::error_json(*drained.end->error)));
        co_await exchange.stream_write(api::sse_done());
        co_await exchange.end_stream();
        co_return;
      }
      connected = co_await write_events(exchange, format.finish(index, *drained.end));
      ends[i] = std::move(drained.end);
      ++ended;
    }
    if (connected && ended == count) {
      std::vector<CompletionEnd> all;
      for (auto& end : ends) all.push_back(std::move(*end));
      co_await write_events(exchange, format.last(all));
      co_await exchange.stream_write(api::sse_done());
      co_await exchange.end_stream();
      co_return;
    }
    if (!connected || exchange.peer_closed()) break;
    co_await wait_for_news(*jobs.timer);
  }
  jobs.cancel_all();  // the client left: the engine thread frees the sessions
}

}  // namespace tandem
