#include "coordinator/server/job_flow.h"

#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

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

asio::awaitable<std::optional<RunningJob>> submit_job(http::Exchange& exchange,
                                                      EngineLoop& engine_loop, CompletionJob& job) {
  RunningJob running;
  running.timer = std::make_shared<asio::steady_timer>(exchange.executor());
  auto wake = [timer = running.timer, executor = exchange.executor()] {
    asio::post(executor, [timer] { timer->cancel(); });
  };
  job.stream = std::make_shared<CompletionStream>(wake);
  running.stream = job.stream;
  if (!engine_loop.submit(job)) {
    co_await exchange.respond(error_response(
        exchange.request(),
        api::rate_limited("the request queue is full (scheduler.max_queued_requests); "
                          "retry after a moment")));
    co_return std::nullopt;
  }
  co_return running;
}

asio::awaitable<std::optional<RunningJob>> ApiService::admit(
    http::Exchange& exchange, EngineLoop* engine_loop,
    const std::optional<api::ApiError>& rejection, CompletionJob& job) {
  if (rejection) {
    co_await exchange.respond(error_response(exchange.request(), *rejection));
    co_return std::nullopt;
  }
  co_return co_await submit_job(exchange, *engine_loop, job);
}

asio::awaitable<std::optional<FinishedJob>> collect_job(http::Exchange& exchange,
                                                        const RunningJob& job) {
  FinishedJob finished;
  while (true) {
    CompletionStream::Drained drained = job.stream->drain();
    finished.text += drained.text;
    finished.logprobs.insert(finished.logprobs.end(), std::make_move_iterator(drained.logprobs.begin()),
                             std::make_move_iterator(drained.logprobs.end()));
    if (drained.end) {
      finished.end = std::move(*drained.end);
      co_return finished;
    }
    if (exchange.peer_closed()) {
      job.stream->cancel();
      co_return std::nullopt;
    }
    co_await wait_for_news(*job.timer);
  }
}

asio::awaitable<void> stream_job(http::Exchange& exchange, const RunningJob& job,
                                 EventFormat& format) {
  bool connected = co_await exchange.begin_stream();
  if (connected) connected = co_await write_events(exchange, format.opening());
  while (connected) {
    CompletionStream::Drained drained = job.stream->drain();
    if (!drained.text.empty() || !drained.logprobs.empty())
      connected = co_await write_events(exchange, format.text(drained.text, std::move(drained.logprobs)));
    if (drained.end && connected) {
      if (drained.end->error) {
        co_await exchange.stream_write(api::sse_event(api::error_json(*drained.end->error)));
      } else {
        co_await write_events(exchange, format.end(*drained.end));
      }
      co_await exchange.stream_write(api::sse_done());
      co_await exchange.end_stream();
      co_return;
    }
    if (!connected || exchange.peer_closed()) break;
    co_await wait_for_news(*job.timer);
  }
  job.stream->cancel();  // the client left: the engine thread frees its session
}

}  // namespace tandem
