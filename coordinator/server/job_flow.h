// What /v1/completions and /v1/chat/completions do alike once a request is
// a CompletionJob: hand it to the engine loop, then wait for its text
// without blocking a thread (the connection's coroutine sleeps on a timer
// that the engine thread's wake-up cancels, and looks at the socket every
// few tens of milliseconds so that a client that hangs up cancels its
// session), whole or as server-sent events. The routes differ only in the
// JSON they write, which an EventFormat supplies.
#pragma once

#include <boost/asio/steady_timer.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "coordinator/engine_loop/completion_stream.h"
#include "coordinator/engine_loop/engine_loop.h"
#include "coordinator/http/exchange.h"

namespace tandem {

// A job handed to the engine loop: its stream and the timer its wake-ups cancel.
struct RunningJob {
  std::shared_ptr<CompletionStream> stream;
  std::shared_ptr<boost::asio::steady_timer> timer;
};

// Submits `job` (its stream is made here). Answers 429 itself and returns
// nullopt when the queue is full.
boost::asio::awaitable<std::optional<RunningJob>> submit_job(http::Exchange& exchange,
                                                             EngineLoop& engine_loop,
                                                             CompletionJob& job);

struct FinishedJob {
  std::string text;
  std::vector<api::LogprobEntry> logprobs;  // when the request asked for them
  CompletionEnd end;
};

// Waits for the whole text. nullopt when the client left (the session is
// cancelled then, and nothing is to be answered).
boost::asio::awaitable<std::optional<FinishedJob>> collect_job(http::Exchange& exchange,
                                                               const RunningJob& job);

// The JSON payloads a streaming route sends, "data: " and framing added by
// stream_job.
class EventFormat {
 public:
  virtual ~EventFormat() = default;
  // Before any text (chat: the assistant's role).
  virtual std::vector<std::string> opening() { return {}; }
  // For text as it arrives, with the logprob entries of its tokens (either
  // may be empty; the events may be none, when the format holds text back).
  virtual std::vector<std::string> text(const std::string& piece,
                                        std::vector<api::LogprobEntry> logprobs) = 0;
  // After the last text, for an end without error: the finish, usage.
  virtual std::vector<std::string> end(const CompletionEnd& end) = 0;
};

// Streams the job as server-sent events: opening, text, end (or the error
// as an error object), then [DONE]. Cancels the session if the client leaves.
boost::asio::awaitable<void> stream_job(http::Exchange& exchange, const RunningJob& job,
                                        EventFormat& format);

}  // namespace tandem
