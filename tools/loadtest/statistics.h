// Load-test statistics: percentiles, latency distributions and the run
// summary (throughput, TTFT, TPOT, ITL, E2E latency, goodput), computed from
// RequestRecords with the definitions of vLLM's `bench serve`, so our figures
// and theirs can be compared side by side.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tools/loadtest/request_record.h"

namespace tandem::loadtest {

// The p-th percentile (p in [0, 100]) of values, interpolating linearly
// between the closest ranks: numpy.percentile's default ("linear") method.
// Throws invalid_argument for an empty vector or p outside [0, 100].
double percentile(std::vector<double> values, double p);

// Summary of one latency sample (seconds in, seconds out).
struct Distribution {
  double mean = 0, median = 0, p90 = 0, p99 = 0, min = 0, max = 0;
  size_t count = 0;
};

// All zeros (count 0) for an empty sample.
Distribution describe(std::vector<double> values);

// Service-level objectives for goodput, in seconds; a request meets the SLO
// when it is at or below every bound given.
struct Slo {
  std::optional<double> ttft_seconds, tpot_seconds, e2e_seconds;
  bool any() const { return ttft_seconds || tpot_seconds || e2e_seconds; }
};

struct RunSummary {
  double duration_seconds = 0;
  size_t requests = 0, completed = 0, failed = 0;
  std::map<int, size_t> errors_by_status;  // HTTP status -> failures; 0 = no response
  // HTTP status -> the first failure's message: a count alone does not say
  // what to fix (e.g. a 400 that is the server's context_length_exceeded).
  std::map<int, std::string> first_error_by_status;
  double request_throughput = 0;      // completed requests / s
  double output_throughput = 0;       // output tokens / s
  double total_token_throughput = 0;  // (prompt + output) tokens / s
  long prompt_tokens = 0, output_tokens = 0;  // of completed requests only
  // Of those prompt tokens, the ones the server reported cached
  // (usage.prompt_tokens_details.cached_tokens).
  long cached_tokens = 0;
  // cached_tokens / prompt_tokens: the prefix cache's hit rate as the
  // client sees it; 0 without prompt tokens.
  double cached_token_rate() const {
    return prompt_tokens > 0 ? static_cast<double>(cached_tokens) / prompt_tokens : 0.0;
  }
  Distribution ttft, tpot, itl, e2e;          // seconds
  std::optional<double> goodput;  // completed requests meeting every SLO / s; nullopt without SLO
};

// Summarizes a run of duration_seconds (>= 0; throughputs are 0 when it is
// 0). As in vLLM, failed requests are excluded from the latency statistics
// and from the token counts, and only counted by status. TPOT of a request is
// (latency - ttft) / (output_tokens - 1), defined only when output_tokens > 1
// (for goodput such a request's TPOT counts as 0); ITL pools every gap of
// every completed request.
RunSummary summarize(std::span<const RequestRecord> records, double duration_seconds,
                     const Slo& slo);

}  // namespace tandem::loadtest
