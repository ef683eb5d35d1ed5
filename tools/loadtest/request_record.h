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
  int output_tokens = 0;    // from usage; chunks with text when usage is absent
  std::string text;         // the generated text
};

}  // namespace tandem::loadtest
