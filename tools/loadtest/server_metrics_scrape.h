// What a load test reads from the server's own GET /metrics page: a parser
// for the Prometheus text exposition format, and the speculative-decoding
// counters' change over a run (scraped before and after it), from which the
// report gives acceptance and tokens per target step.
//
// Names are Tandem's (docs/serving.md, "Metrics"); a peer server without them
// yields zeros, not an error.
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace tandem::loadtest {

// Every sample of a text exposition, keyed by its series exactly as written:
// the name plus labels, e.g. `tandem_kv_cache_blocks_used{model="target"}`
// (histograms give one key per `_bucket{le=...}`, `_sum` and `_count`).
// A series labelled model_name is also kept without that label
// (`tandem_generation_tokens_total{model_name="m"}` as well as
// `tandem_generation_tokens_total`): a server serves one model, and its
// series are read by name whether or not the server labels them.
// Comments (# HELP, # TYPE) and blank lines are skipped; timestamps are
// ignored; +Inf, -Inf and NaN are read as such. A malformed line throws
// tandem::Error (corrupt_data) naming its line number.
std::map<std::string, double> parse_prometheus(std::string_view text);

// Counter increases between two scrapes.
struct SpeculationDelta {
  double drafts = 0;             // tandem_spec_decode_num_drafts_total
  double draft_tokens = 0;       // tandem_spec_decode_num_draft_tokens_total
  double accepted_tokens = 0;    // tandem_spec_decode_num_accepted_tokens_total
  double target_steps = 0;       // tandem_target_steps_total
  double generation_tokens = 0;  // tandem_generation_tokens_total
  // Pipelined drafting (where each side's time went).
  double step_seconds = 0;        // tandem_engine_step_seconds_total
  double draft_busy_seconds = 0;  // tandem_draft_busy_seconds_total
  double target_seconds = 0;      // tandem_target_seconds_total
  double ahead_hits = 0;          // tandem_draft_ahead_total{result="hit"}
  double ahead_misses = 0;        // tandem_draft_ahead_total{result="miss"}
  double pipelined_steps = 0;     // tandem_pipeline_steps_total{shape="ahead" or "pingpong"}

  // Each ratio is 0 when its denominator is: a run without drafts has no
  // acceptance to report.
  double acceptance_rate() const;         // accepted / draft tokens
  double accepted_per_draft() const;      // accepted tokens / drafts
  double tokens_per_target_step() const;  // generation tokens / target steps
  double draft_busy_fraction() const;     // draft busy / step seconds
  double target_busy_fraction() const;    // target seconds / step seconds
  double ahead_hit_rate() const;          // hits / (hits + misses)
};

// The prefix caches' counters' increase between two scrapes, in prompt
// tokens with vLLM's meaning (queries: prompt tokens looked up; hits: those
// found cached), for the target's cache and the draft's.
struct PrefixCacheDelta {
  double target_queries = 0;  // tandem_prefix_cache_queries_total{model="target"}
  double target_hits = 0;     // tandem_prefix_cache_hits_total{model="target"}
  double draft_queries = 0;   // the same with model="draft"
  double draft_hits = 0;

  // hits / queries; 0 without queries.
  double target_hit_rate() const;
  double draft_hit_rate() const;
};

PrefixCacheDelta prefix_cache_delta(const std::map<std::string, double>& before,
                                    const std::map<std::string, double>& after);

// after - before for each counter; a counter missing from a scrape counts as
// 0. A counter that went down means the server restarted between the scrapes
// (counters reset to 0), so its increase is its value after, as Prometheus's
// rate() takes it.
SpeculationDelta speculation_delta(const std::map<std::string, double>& before,
                                   const std::map<std::string, double>& after);

}  // namespace tandem::loadtest
