// CompletionStream: what the engine thread tells one HTTP request.
//
// The engine thread appends text as sessions advance (with the logprobs of
// the tokens that made it, when the request asked for them) and finishes the stream
// once; the HTTP side drains it whenever it is woken. Neither side waits for
// the other: publishing takes a short lock and calls the wake callback (which
// only posts work to the connection's strand); draining takes the same lock.
// A client that goes away marks the stream cancelled; the engine thread sees
// that before its next step and ends the session, freeing its KV blocks.
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "coordinator/api/api_error.h"
#include "coordinator/api/completion_response.h"
#include "coordinator/api/token_logprobs.h"

namespace tandem {

// How a completion ended, sent once after its last text.
struct CompletionEnd {
  std::string finish_reason;          // stop | length | cancelled | ...
  api::Usage usage;
  api::SpeculationReport speculation;
  // Seconds from the request's arrival to its first output token; none when
  // no token came (the request log reports it).
  std::optional<double> time_to_first_token;
  std::optional<api::ApiError> error;  // set when it ended in an error
  // Σ logprob of the emitted tokens, when the request asked for logprobs
  // (best_of ranks choices by it).
  std::optional<double> cumulative_logprob;
};

class CompletionStream {
 public:
  // `wake` is called on the engine thread after new text or the end arrives;
  // it must not block.
  explicit CompletionStream(std::function<void()> wake) : wake_(std::move(wake)) {}

  // Engine side. `logprobs` are those of the tokens whose text this is
  // (logprob_aligner.h says which).
  void publish(std::string text, std::vector<api::LogprobEntry> logprobs = {});
  void finish(CompletionEnd end);

  // HTTP side: moves out the text published since the last call, and the end
  // once it has come (after all text).
  struct Drained {
    std::string text;
    std::vector<api::LogprobEntry> logprobs;  // of the tokens of `text`
    std::optional<CompletionEnd> end;
  };
  Drained drain();

  // Either side: the client is gone (or the request is abandoned).
  void cancel() { cancelled_.store(true); }
  bool cancelled() const { return cancelled_.load(); }

 private:
  std::function<void()> wake_;
  std::mutex mutex_;
  std::string pending_text_;
  std::vector<api::LogprobEntry> pending_logprobs_;
  std::optional<CompletionEnd> end_;
  bool end_taken_ = false;
  std::atomic<bool> cancelled_{false};
};

}  // namespace tandem
