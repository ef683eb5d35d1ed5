#include "tools/soak/soak_report.h"

#include <cstdio>

namespace tandem::soak {
namespace {

using nlohmann::json;

std::string line(const char* pattern, auto... values) {
  char text[512];
  std::snprintf(text, sizeof text, pattern, values...);
  return text;
}

size_t class_count(const KindTally& counts, const std::string& status_class) {
  const auto found = counts.classes.find(status_class);
  return found == counts.classes.end() ? 0 : found->second;
}

double mib(long kb) { return static_cast<double>(kb) / 1024.0; }

}  // namespace

std::string soak_text(const SoakResult& result, const Verdict& verdict, const SoakLimits& limits) {
  std::string out = line("Soak: %.0f s of traffic\n", result.traffic_seconds);
  out += line("%-18s %7s %7s %7s %7s %6s %9s %6s %5s %10s\n", "kind", "sent", "2xx", "4xx", "5xx", "none",
              "timed out", "429", "cut", "unexpected");
  KindTally total;
  for (Kind kind : kAllKinds) {
    const KindTally& counts = result.kinds[static_cast<size_t>(kind)];
    out += line("%-18s %7zu %7zu %7zu %7zu %6zu %9zu %6zu %5zu %10zu\n", kind_name(kind), counts.sent,
                class_count(counts, "2xx"), class_count(counts, "4xx"), class_count(counts, "5xx"),
                class_count(counts, "none"), counts.timed_out, counts.overloaded, counts.disconnected,
                counts.unexpected);
    total.sent += counts.sent;
    total.timed_out += counts.timed_out;
    total.overloaded += counts.overloaded;
    total.disconnected += counts.disconnected;
    total.unexpected += counts.unexpected;
    for (const auto& [name, count] : counts.classes) total.classes[name] += count;
  }
  out += line("%-18s %7zu %7zu %7zu %7zu %6zu %9zu %6zu %5zu %10zu\n", "all", total.sent,
              class_count(total, "2xx"), class_count(total, "4xx"), class_count(total, "5xx"),
              class_count(total, "none"), total.timed_out, total.overloaded, total.disconnected,
              total.unexpected);
  for (const RssSummary& rss : verdict.rss)
    out += line("RSS pid %d (%s): start %.1f MiB, after warm-up (%.0f s) %.1f MiB, end %.1f MiB, max %.1f "
                "MiB; growth %+.2f%% (limit %g%%)\n",
                rss.pid, rss.name.c_str(), mib(rss.start_kb), rss.warm_at, mib(rss.warm_kb), mib(rss.end_kb),
                mib(rss.max_kb), rss.growth_percent, limits.rss_growth_percent);
  out += line("/health: %zu probes, %zu failed or over %g s; median %.4f s, p99 %.4f s, worst %.4f s\n",
              verdict.health.count, verdict.health_failures, limits.health_seconds, verdict.health.median,
              verdict.health.p99, verdict.health.max);
  out += line("After the traffic: %s in %.1f s", result.drain.idle ? "idle" : "NOT idle", result.drain.seconds);
  for (const auto& [series, value] : result.drain.last) out += line("; %s %g", series.c_str(), value);
  out += "\n";
  for (const UnexpectedAnswer& answer : result.unexpected)
    out += line("unexpected at %.1f s: %s got %d: %s\n", answer.at, kind_name(answer.kind), answer.status,
                answer.why.c_str());
  for (const std::string& warning : verdict.warnings) out += "warning: " + warning + "\n";
  for (const std::string& failure : verdict.failures) out += "failure: " + failure + "\n";
  out += verdict.pass ? "PASS\n" : "FAIL\n";
  return out;
}

json soak_json(const SoakResult& result, const Verdict& verdict, const SoakLimits& limits,
               const SoakOptions& options) {
  json kinds = json::object();
  json by_class = json::object();
  for (Kind kind : kAllKinds) {
    const KindTally& counts = result.kinds[static_cast<size_t>(kind)];
    json statuses = json::object();
    for (const auto& [status, count] : counts.statuses) statuses[std::to_string(status)] = count;
    for (const auto& [name, count] : counts.classes)
      by_class[name] = by_class.value(name, size_t{0}) + count;
    kinds[kind_name(kind)] = {{"sent", counts.sent},           {"expected", counts.expected},
                              {"unexpected", counts.unexpected}, {"unexpected_5xx", counts.unexpected_5xx},
                              {"timed_out", counts.timed_out},   {"overloaded_429", counts.overloaded},
                              {"disconnected", counts.disconnected}, {"statuses", statuses},
                              {"classes", counts.classes}};
  }
  json unexpected = json::array();
  for (const UnexpectedAnswer& answer : result.unexpected)
    unexpected.push_back(
        {{"kind", kind_name(answer.kind)}, {"status", answer.status}, {"at", answer.at}, {"why", answer.why}});
  json rss = json::array();
  for (const RssSummary& summary : verdict.rss)
    rss.push_back({{"pid", summary.pid},           {"name", summary.name},
                   {"samples", summary.samples},   {"start_kb", summary.start_kb},
                   {"warm_kb", summary.warm_kb},   {"warm_at", summary.warm_at},
                   {"end_kb", summary.end_kb},     {"end_at", summary.end_at},
                   {"max_kb", summary.max_kb},     {"growth_percent", summary.growth_percent}});
  return {
      {"config",
       {{"url", "http://" + options.endpoint.host + ":" + std::to_string(options.endpoint.port)},
        {"duration_seconds", options.duration_seconds},
        {"warmup_seconds", limits.warmup_seconds},
        {"clients", options.clients},
        {"burst_every_seconds", options.burst_every_seconds},
        {"burst_size", options.burst_size},
        {"seed", options.seed},
        {"pids", options.pids}}},
      {"traffic_seconds", result.traffic_seconds},
      {"requests", {{"total", [&] {
                       size_t total = 0;
                       for (const KindTally& counts : result.kinds) total += counts.sent;
                       return total;
                     }()},
                    {"unexpected", result.unexpected_total},
                    {"by_class", by_class},
                    {"by_kind", kinds}}},
      {"unexpected", unexpected},
      {"rss", rss},
      {"rss_growth_limit_percent", limits.rss_growth_percent},
      {"health",
       {{"probes", verdict.health.count},
        {"failures", verdict.health_failures},
        {"limit_seconds", limits.health_seconds},
        {"median_seconds", verdict.health.median},
        {"p99_seconds", verdict.health.p99},
        {"worst_seconds", verdict.health.max}}},
      {"after_traffic",
       {{"idle", result.drain.idle}, {"seconds", result.drain.seconds}, {"error", result.drain.error},
        {"metrics", result.drain.last}}},
      {"pass", verdict.pass},
      {"failures", verdict.failures},
      {"warnings", verdict.warnings},
  };
}

}  // namespace tandem::soak
