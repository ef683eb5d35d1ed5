// RequestRecord: what the handler learned about one request, for its line
// in the request log (request_log.h). The HTTP server knows the method,
// path, status and duration of every request; only a route knows what the
// engine did for it, so the route fills this in on the request's Exchange.
// Counts only, never text: the log must not hold prompts or outputs.
#pragma once

#include <algorithm>
#include <optional>
#include <string>

namespace tandem::http {

// What the engine did for one generation job.
struct GenerationRecord {
  int prompt_tokens = 0;
  int completion_tokens = 0;
  std::optional<double> time_to_first_token;  // seconds from arrival; none: no token came
  int drafted_tokens = 0;   // draft tokens proposed for verification
  int accepted_tokens = 0;  // of those, kept
};

struct RequestRecord {
  // Set once a route ran the engine for the request.
  std::optional<GenerationRecord> generation;
  // Why the server failed the request, as its client was told: the cause of
  // a 5xx, or of the server error that ended an event stream after its 200.
  // Empty: no server failure (a client's own 4xx is not logged with text).
  std::string error;

  // A request that runs several jobs (several choices) logs their sum; its
  // time to first token is the earliest job's.
  void add_generation(const GenerationRecord& job) {
    if (!generation) {
      generation = job;
      return;
    }
    GenerationRecord& sum = *generation;
    sum.prompt_tokens += job.prompt_tokens;
    sum.completion_tokens += job.completion_tokens;
    sum.drafted_tokens += job.drafted_tokens;
    sum.accepted_tokens += job.accepted_tokens;
    if (job.time_to_first_token)
      sum.time_to_first_token = std::min(sum.time_to_first_token.value_or(*job.time_to_first_token),
                                         *job.time_to_first_token);
  }
};

}  // namespace tandem::http
