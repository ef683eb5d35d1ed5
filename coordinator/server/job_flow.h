// What /v1/completions and /v1/chat/completions do alike once a request is
// CompletionJobs (one per choice: n, best_of and a list of prompts fan a
// request out into several, all separate engine sessions): hand them to the
// engine loop all or none, then wait for their text without blocking a
// thread (the connection's coroutine sleeps on one timer that every job's
// wake-up cancels, and looks at the socket every few tens of milliseconds
// so that a client that hangs up cancels every session), whole or as
// server-sent events. The routes differ only in the JSON they write, which
// an EventFormat supplies.
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

// The jobs of one request handed to the engine loop: their streams, in the
// order the jobs were given, and the timer their wake-ups cancel.
struct RunningJobs {
  std::vector<std::shared_ptr<CompletionStream>> streams;
  std::shared_ptr<boost::asio::steady_timer> timer;
  // Every session ends (the engine thread frees their KV blocks).
  void cancel_all() const;
};

// Submits every job (their streams are made here), all or none. Answers 429
// itself and returns nullopt when the queue cannot take them all.
boost::asio::awaitable<std::optional<RunningJobs>> submit_jobs(http::Exchange& exchange,
                                                               EngineLoop& engine_loop,
                                                               std::vector<CompletionJob>& jobs);

struct FinishedJob {
  std::string text;
  std::vector<api::LogprobEntry> logprobs;  // when the request asked for them
  CompletionEnd end;
};

struct CollectedJobs {
  std::vector<FinishedJob> jobs;       // every job's, in order (when no error)
  std::optional<api::ApiError> error;  // the first error a job ended with; the rest are cancelled
};

// Waits for every job's whole text, or for the first error. nullopt when
// the client left (every session is cancelled then, and nothing is to be
// answered).
boost::asio::awaitable<std::optional<CollectedJobs>> collect_jobs(http::Exchange& exchange,
                                                                  const RunningJobs& jobs);

// The usage and speculation of a request whose jobs ended so: summed over
// every job, prompt tokens once per prompt (`per_prompt` consecutive jobs
// share one; api::total_usage).
struct RequestTotals {
  api::Usage usage;
  api::SpeculationReport speculation;
};
RequestTotals request_totals(const std::vector<CompletionEnd>& ends, int per_prompt);
RequestTotals request_totals(const std::vector<FinishedJob>& jobs, int per_prompt);

// Adds what the engine did for a job that ended (tokens, time to first
// token, drafts; a server-side error's cause) to the exchange's request log record.
// collect_jobs and stream_jobs call it; a route that drains a job itself must.
void record_job_end(http::Exchange& exchange, const CompletionEnd& end);

// The JSON payloads a streaming route sends, "data: " and framing added by
// stream_jobs. `index` is the job's position (the choice's index).
class EventFormat {
 public:
  virtual ~EventFormat() = default;
  // Before any text (chat: the assistant's role), per choice.
  virtual std::vector<std::string> opening(int /*index*/) { return {}; }
  // For text as it arrives, with the logprob entries of its tokens (either
  // may be empty; the events may be none, when the format holds text back).
  virtual std::vector<std::string> text(int index, const std::string& piece,
                                        std::vector<api::LogprobEntry> logprobs) = 0;
  // After a choice's last text, for an end without error: its finish.
  virtual std::vector<std::string> finish(int index, const CompletionEnd& end) = 0;
  // After every choice has finished: the usage chunk, when asked for.
  virtual std::vector<std::string> last(const std::vector<CompletionEnd>& ends) = 0;
};

// Streams the jobs as server-sent events, each choice's text as it comes:
// openings, text and finishes, then last (or the first error as an error
// object, every other session cancelled), then [DONE]. Cancels every
// session if the client leaves.
boost::asio::awaitable<void> stream_jobs(http::Exchange& exchange, const RunningJobs& jobs,
                                         EventFormat& format);

}  // namespace tandem
