// Reports of a load-test run: the terminal table (laid out like vLLM's
// "Serving Benchmark Result" block), the JSON record with every figure, and
// the progress bar shown while requests complete.
#pragma once

#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

#include <vector>

#include "tools/loadtest/conversation_runner.h"
#include "tools/loadtest/statistics.h"
#include "tools/loadtest/variant_rounds.h"

namespace tandem::loadtest {

// A fixed-width table, latencies in milliseconds, ending with a newline.
// title heads it, e.g. "Serving Benchmark Result".
std::string summary_table(const RunSummary& summary, const std::string& title);

// Every figure of the summary. Counts and throughputs keep vLLM's key names
// (completed, request_throughput, output_throughput, ...); latencies are in
// milliseconds as <stat>_<metric>_ms with metric ttft, tpot, itl or e2el
// (mean_ttft_ms, p99_e2el_ms, ...); goodput is null without an SLO; errors
// maps each HTTP status (as a string, "0" = no response) to its failures.
nlohmann::json summary_json(const RunSummary& summary);

// A multi-turn run's conversations in one line, ending with a newline:
// "Conversations: 5 replayed, 4 finished; turns per conversation 3.2 mean".
std::string conversations_line(const std::vector<ConversationTotals>& conversations);

// One object per conversation replayed, in the order they started: where
// (file:line), turns, completed, failed, prompt_tokens, output_tokens,
// seconds (first turn sent to last turn's end), finished.
nlohmann::json conversations_json(const std::vector<ConversationTotals>& conversations);

// One variant against the first in one line, ending with a newline:
// "<name>, output throughput per round: 1.054, 0.924; geometric mean 0.987
// (95% interval 0.545-1.787)", the interval only where summary has one.
std::string comparison_line(const std::string& name, const std::vector<double>& ratios,
                            const RatioSummary& summary);

// "[#####.......]  42/100": width cells, filled in proportion to done/total
// (done is capped at total), then the count right-aligned to total's digits.
std::string progress_bar(size_t done, size_t total, int width);

// The progress bar with the rate so far and the time left at that rate:
// "[#####.......]  42/100  3.5 req/s  ETA 17 s". A run bounded by time only
// (total 0) has no bar and no ETA: "42 done  3.5 req/s". The rate and ETA
// read "-" until a request has ended.
std::string progress_line(size_t done, size_t total, double elapsed_seconds, int width);

}  // namespace tandem::loadtest
