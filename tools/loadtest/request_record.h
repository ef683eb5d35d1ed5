// RequestRecord: what the load generator saw of one request, the input of
// every statistic (statistics.h). Times are seconds; definitions follow
// vLLM's `bench serve`: TTFT from sending to the first chunk with text,
// ITL the gaps between successive chunks with text, latency from sending to
// the end of the response.
#pragma once

#include <string>
#include <vector>

namespace tandem::loadtest {

struct RequestRecord {
  bool ok = false;          // a complete 200 response
  int status = 0;           // HTTP status; 0 when no response came (connection error)
  std::string error;        // what went wrong, when !ok
  double start = 0;         // when it was sent, seconds since the run began
  double ttft = 0;          // seconds from sending to the first chunk with text
  double latency = 0;       // seconds from sending to the end of the response
  std::vector<double> itl;  // seconds between successive chunks with text
  int prompt_tokens = 0;    // from the response's usage
  // usage.prompt_tokens_details.cached_tokens: prompt tokens the server
  // found in its prefix cache (OpenAI's field); 0 when it does not say.
  int cached_tokens = 0;
  int output_tokens = 0;    // from usage; chunks with text when usage is absent
  std::string text;         // the generated text
};

// The error of a 200 stream that carried no text (or counted no completion
// tokens): a failed request, as vLLM's benchmark client counts it, never a
// success with a TTFT of 0.
inline constexpr const char* kEmptyCompletion =
    "empty completion: the stream carried no text (0 completion tokens)";

// Turns a successful record without any generated text, or whose usage
// counts no completion tokens, into a failure (kEmptyCompletion); its TTFT
// and ITL are cleared, since no token arrived to time. The load generator's
// runners (load_runner, conversation_runner) apply it to every record;
// CompletionCall itself does not, so tools/soak/ keeps judging its own mix.
inline void fail_empty_completion(RequestRecord& record) {
  if (!record.ok || (!record.text.empty() && record.output_tokens > 0)) return;
  record.ok = false;
  record.error = kEmptyCompletion;
  record.ttft = 0;
  record.itl.clear();
}

}  // namespace tandem::loadtest
