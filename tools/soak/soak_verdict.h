// The soak's verdict on a run (soak_run.h): pass, or fail with every reason,
// and the figures the reasons rest on (RSS per process, /health latency).
//
// A run fails when: any answer was unexpected (traffic_mix.h's classify: a
// 5xx other than the documented 504, a valid request refused, a bad one
// accepted, no answer); a /health probe failed or took longer than the
// limit; a server process's RSS at the end is more than the limit above its
// RSS just after the warm-up, or the process went away; the server was not
// idle again (no request running or waiting, no KV block used) within the
// drain time; or a kind of good request never once got a 200.
#pragma once

#include <string>
#include <vector>

#include "tools/loadtest/statistics.h"
#include "tools/soak/soak_run.h"

namespace tandem::soak {

struct SoakLimits {
  double warmup_seconds = 15;       // RSS growth counts from the first sample at or after this
  double rss_growth_percent = 5;    // end over after-warm-up, per process
  double health_seconds = 2;        // the slowest acceptable /health answer
};

struct RssSummary {
  int pid = 0;
  std::string name;
  size_t samples = 0;
  long start_kb = 0, warm_kb = 0, end_kb = 0, max_kb = 0;
  double warm_at = -1;         // when the after-warm-up sample was taken; -1: none
  double end_at = 0;
  double growth_percent = 0;   // (end - warm) / warm, in percent
};

struct Verdict {
  bool pass = true;
  std::vector<std::string> failures;  // why it failed; empty when it passed
  std::vector<std::string> warnings;  // what the run did not exercise
  std::vector<RssSummary> rss;
  loadtest::Distribution health;      // /health answer times, seconds
  size_t health_failures = 0;         // probes not 200 or over the limit
};

RssSummary summarize_rss(const ProcessSeries& series, double warmup_seconds);

Verdict judge(const SoakResult& result, const SoakLimits& limits);

}  // namespace tandem::soak
