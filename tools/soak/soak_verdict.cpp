#include "tools/soak/soak_verdict.h"

#include <algorithm>
#include <cstdio>

namespace tandem::soak {
namespace {

std::string format(const char* pattern, double a, double b = 0, double c = 0) {
  char text[256];
  std::snprintf(text, sizeof text, pattern, a, b, c);
  return text;
}

void fail(Verdict& verdict, std::string why) {
  verdict.pass = false;
  verdict.failures.push_back(std::move(why));
}

const KindTally& of(const SoakResult& result, Kind kind) { return result.kinds[static_cast<size_t>(kind)]; }

void judge_answers(const SoakResult& result, Verdict& verdict) {
  size_t unexpected_5xx = 0;
  for (const KindTally& counts : result.kinds) unexpected_5xx += counts.unexpected_5xx;
  if (result.unexpected_total > 0) {
    std::string why = std::to_string(result.unexpected_total) + " unexpected answer(s), " +
                      std::to_string(unexpected_5xx) + " of them 5xx";
    if (!result.unexpected.empty()) {
      const UnexpectedAnswer& first = result.unexpected.front();
      why += "; the first, at " + format("%.1f s", first.at) + ": " + kind_name(first.kind) +
             " got " + (first.status == 0 ? "no response" : "HTTP " + std::to_string(first.status)) +
             " (" + first.why + ")";
    }
    fail(verdict, why);
  }
  for (Kind kind : {Kind::completion, Kind::completion_stream, Kind::chat, Kind::chat_stream}) {
    const KindTally& counts = of(result, kind);
    const auto ok = counts.statuses.find(200);
    if (counts.sent > 0 && (ok == counts.statuses.end() || ok->second == 0))
      fail(verdict, std::string("no ") + kind_name(kind) + " request got a 200 (of " +
                        std::to_string(counts.sent) + " sent)");
  }
  if (of(result, Kind::timeout).sent > 0 && of(result, Kind::timeout).timed_out == 0)
    verdict.warnings.push_back(
        "no timeout request ran past the server's deadline: set server.request_timeout_seconds "
        "below what a long request takes (tools/soak/README.md)");
  size_t overloaded = 0;
  for (const KindTally& counts : result.kinds) overloaded += counts.overloaded;
  if (of(result, Kind::burst).sent > 0 && overloaded == 0)
    verdict.warnings.push_back(
        "no burst went over the queue (no 429): raise --burst-size or lower "
        "scheduler.max_queued_requests");
  if (of(result, Kind::disconnect).sent > 0 && of(result, Kind::disconnect).disconnected == 0)
    verdict.warnings.push_back("every disconnect request finished before the client cut it off");
}

void judge_health(const SoakResult& result, const SoakLimits& limits, Verdict& verdict) {
  std::vector<double> seconds;
  const HealthProbe* worst = nullptr;
  for (const HealthProbe& probe : result.health) {
    seconds.push_back(probe.seconds);
    if (probe.status != 200 || probe.seconds > limits.health_seconds) ++verdict.health_failures;
    if (worst == nullptr || probe.seconds > worst->seconds) worst = &probe;
  }
  verdict.health = loadtest::describe(seconds);
  if (result.health.empty()) {
    fail(verdict, "no /health probe was made");
  } else if (verdict.health_failures > 0) {
    fail(verdict, std::to_string(verdict.health_failures) + " of " + std::to_string(result.health.size()) +
                      " /health probes failed or took over " + format("%g s", limits.health_seconds) +
                      " (the slowest: " + format("%.3f s at %.1f s, HTTP ", worst->seconds, worst->at) +
                      std::to_string(worst->status) + ")");
  }
}

void judge_rss(const SoakResult& result, const SoakLimits& limits, Verdict& verdict) {
  for (const ProcessSeries& series : result.processes) {
    RssSummary summary = summarize_rss(series, limits.warmup_seconds);
    const std::string who = "process " + std::to_string(series.pid) + " (" + series.name + ")";
    if (summary.samples == 0) {
      fail(verdict, who + ": no RSS sample could be read");
    } else if (summary.end_at < result.traffic_seconds) {
      fail(verdict, who + format(" went away during the soak (last seen at %.1f s)", summary.end_at));
    } else if (summary.warm_at < 0) {
      fail(verdict, who + ": no RSS sample after the warm-up (is the soak longer than --warmup?)");
    } else if (summary.growth_percent >= limits.rss_growth_percent) {
      fail(verdict, who + format(": RSS grew %.1f%% after the warm-up (%.1f MiB to ", summary.growth_percent,
                                 summary.warm_kb / 1024.0) +
                        format("%.1f MiB; limit %g%%)", summary.end_kb / 1024.0, limits.rss_growth_percent));
    }
    verdict.rss.push_back(summary);
  }
  if (result.processes.empty()) verdict.warnings.push_back("no server process given: RSS not watched");
}

void judge_drain(const SoakResult& result, Verdict& verdict) {
  const DrainState& drain = result.drain;
  if (drain.idle) return;
  std::string why = format("the server was not idle %.1f s after the traffic stopped", drain.seconds);
  if (!drain.error.empty()) why += ": " + drain.error;
  for (const auto& [series, value] : drain.last) why += "; " + series + " " + format("%g", value);
  fail(verdict, why);
}

}  // namespace

RssSummary summarize_rss(const ProcessSeries& series, double warmup_seconds) {
  RssSummary summary;
  summary.pid = series.pid;
  summary.name = series.name;
  summary.samples = series.samples.size();
  if (series.samples.empty()) return summary;
  summary.start_kb = series.samples.front().kb;
  summary.end_kb = series.samples.back().kb;
  summary.end_at = series.samples.back().at;
  for (const RssSample& sample : series.samples) {
    summary.max_kb = std::max(summary.max_kb, sample.kb);
    if (summary.warm_at < 0 && sample.at >= warmup_seconds) {
      summary.warm_at = sample.at;
      summary.warm_kb = sample.kb;
    }
  }
  if (summary.warm_at >= 0 && summary.warm_kb > 0)
    summary.growth_percent = 100.0 * static_cast<double>(summary.end_kb - summary.warm_kb) /
                             static_cast<double>(summary.warm_kb);
  return summary;
}

Verdict judge(const SoakResult& result, const SoakLimits& limits) {
  Verdict verdict;
  judge_answers(result, verdict);
  judge_health(result, limits, verdict);
  judge_rss(result, limits, verdict);
  judge_drain(result, verdict);
  return verdict;
}

}  // namespace tandem::soak
