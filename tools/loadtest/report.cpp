// The terminal table, JSON record and progress bar of a run: see report.h.
#include "tools/loadtest/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string_view>

#include "common/error.h"

namespace tandem::loadtest {
namespace {

constexpr int kTableWidth = 50;  // vLLM's block width, so the two line up
constexpr int kLabelWidth = 40;

// "====== title ======" or "------ title ------", kTableWidth wide.
std::string banner(std::string_view title, char fill) {
  std::string text = title.empty() ? std::string() : " " + std::string(title) + " ";
  if (static_cast<int>(text.size()) >= kTableWidth) return text + "\n";
  const size_t pad = kTableWidth - text.size();
  return std::string(pad / 2, fill) + text + std::string(pad - pad / 2, fill) + "\n";
}

std::string row(std::string_view label, const std::string& value) {
  std::string line(label);
  line.resize(std::max<size_t>(kLabelWidth, line.size() + 1), ' ');
  return line + value + "\n";
}

std::string fixed(double value, int decimals) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

std::string count(long long value) { return std::to_string(value); }

// The mean/median/P90/P99 rows of one latency metric, in milliseconds.
std::string latency_rows(const Distribution& d, std::string_view heading,
                         std::string_view metric) {
  const std::string m(metric);
  std::string out = banner(heading, '-');
  out += row("Mean " + m + " (ms):", fixed(d.mean * 1e3, 2));
  out += row("Median " + m + " (ms):", fixed(d.median * 1e3, 2));
  out += row("P90 " + m + " (ms):", fixed(d.p90 * 1e3, 2));
  out += row("P99 " + m + " (ms):", fixed(d.p99 * 1e3, 2));
  return out;
}

void add_distribution_ms(nlohmann::json& out, const Distribution& d, const std::string& metric) {
  out["mean_" + metric + "_ms"] = d.mean * 1e3;
  out["median_" + metric + "_ms"] = d.median * 1e3;
  out["p90_" + metric + "_ms"] = d.p90 * 1e3;
  out["p99_" + metric + "_ms"] = d.p99 * 1e3;
  out["min_" + metric + "_ms"] = d.min * 1e3;
  out["max_" + metric + "_ms"] = d.max * 1e3;
  out[metric + "_count"] = d.count;
}

// "  first: MESSAGE", the message's first line, cut at kErrorWidth
// characters: wider than the block, since a server's message is only useful
// whole (an HTML error page is not, and stays one line).
constexpr size_t kErrorWidth = 150;
std::string first_error_row(const std::string& message) {
  const std::string prefix = "  first: ";
  std::string text = message.substr(0, message.find('\n'));
  const size_t room = kErrorWidth;
  if (text.size() > room) text = text.substr(0, room - 3) + "...";
  return prefix + text + "\n";
}

std::string status_label(int status) {
  return status == 0 ? std::string("No response:") : "HTTP " + std::to_string(status) + ":";
}

}  // namespace

std::string summary_table(const RunSummary& s, const std::string& title) {
  std::string out = banner(title, '=');
  out += row("Successful requests:", count(static_cast<long long>(s.completed)));
  out += row("Failed requests:", count(static_cast<long long>(s.failed)));
  out += row("Benchmark duration (s):", fixed(s.duration_seconds, 2));
  out += row("Total input tokens:", count(s.prompt_tokens));
  // Only from a server that reports cached prompt tokens: vLLM's block has
  // no such line, and a zero would read as a measured miss.
  if (s.cached_tokens > 0) {
    out += row("Cached input tokens:", count(s.cached_tokens));
    out += row("Cached share of input tokens:", fixed(s.cached_token_rate(), 3));
  }
  out += row("Total generated tokens:", count(s.output_tokens));
  out += row("Request throughput (req/s):", fixed(s.request_throughput, 2));
  if (s.goodput) out += row("Request goodput (req/s):", fixed(*s.goodput, 2));
  out += row("Output token throughput (tok/s):", fixed(s.output_throughput, 2));
  out += row("Total token throughput (tok/s):", fixed(s.total_token_throughput, 2));
  out += latency_rows(s.ttft, "Time to First Token", "TTFT");
  out += latency_rows(s.tpot, "Time per Output Token (excl. 1st token)", "TPOT");
  out += latency_rows(s.itl, "Inter-token Latency", "ITL");
  out += latency_rows(s.e2e, "End-to-end Latency", "E2EL");
  if (!s.errors_by_status.empty()) {
    out += banner("Errors by status", '-');
    for (const auto& [status, failures] : s.errors_by_status) {
      out += row(status_label(status), count(static_cast<long long>(failures)));
      if (auto first = s.first_error_by_status.find(status); first != s.first_error_by_status.end())
        out += first_error_row(first->second);
    }
  }
  out += std::string(kTableWidth, '=') + "\n";
  return out;
}

nlohmann::json summary_json(const RunSummary& s) {
  nlohmann::json out;
  out["duration"] = s.duration_seconds;
  out["requests"] = s.requests;
  out["completed"] = s.completed;
  out["failed"] = s.failed;
  out["total_input_tokens"] = s.prompt_tokens;
  out["total_output_tokens"] = s.output_tokens;
  out["total_cached_tokens"] = s.cached_tokens;
  out["cached_token_rate"] = s.cached_token_rate();
  out["request_throughput"] = s.request_throughput;
  out["output_throughput"] = s.output_throughput;
  out["total_token_throughput"] = s.total_token_throughput;
  out["goodput"] = s.goodput ? nlohmann::json(*s.goodput) : nlohmann::json(nullptr);
  add_distribution_ms(out, s.ttft, "ttft");
  add_distribution_ms(out, s.tpot, "tpot");
  add_distribution_ms(out, s.itl, "itl");
  add_distribution_ms(out, s.e2e, "e2el");
  nlohmann::json errors = nlohmann::json::object();
  for (const auto& [status, failures] : s.errors_by_status)
    errors[std::to_string(status)] = failures;
  out["errors"] = errors;
  nlohmann::json first_errors = nlohmann::json::object();
  for (const auto& [status, message] : s.first_error_by_status)
    first_errors[std::to_string(status)] = message;
  out["first_errors"] = first_errors;
  return out;
}

std::string conversations_line(const std::vector<ConversationTotals>& conversations) {
  size_t finished = 0, turns = 0;
  for (const ConversationTotals& c : conversations) {
    finished += c.finished ? 1 : 0;
    turns += c.turns;
  }
  const double mean = conversations.empty() ? 0.0 : static_cast<double>(turns) / conversations.size();
  return "Conversations: " + count(static_cast<long long>(conversations.size())) + " replayed, " +
         count(static_cast<long long>(finished)) + " finished; turns per conversation " +
         fixed(mean, 1) + " mean\n";
}

nlohmann::json conversations_json(const std::vector<ConversationTotals>& conversations) {
  nlohmann::json out = nlohmann::json::array();
  for (const ConversationTotals& c : conversations) {
    out.push_back({{"where", c.where},
                   {"turns", c.turns},
                   {"completed", c.completed},
                   {"failed", c.failed},
                   {"prompt_tokens", c.prompt_tokens},
                   {"output_tokens", c.output_tokens},
                   {"seconds", c.seconds},
                   {"finished", c.finished}});
  }
  return out;
}

std::string progress_bar(size_t done, size_t total, int width) {
  require(width > 0, ErrorKind::invalid_argument,
          [&] { return "progress bar width " + std::to_string(width) + " must be positive"; });
  done = std::min(done, total);
  const auto cells = static_cast<size_t>(width);
  const size_t filled = total == 0 ? 0 : done * cells / total;
  const std::string total_text = std::to_string(total);
  std::string done_text = std::to_string(done);
  done_text.insert(0, total_text.size() - done_text.size(), ' ');
  return "[" + std::string(filled, '#') + std::string(cells - filled, '.') + "] " + done_text +
         "/" + total_text;
}

std::string progress_line(size_t done, size_t total, double elapsed_seconds, int width) {
  const bool measured = done > 0 && elapsed_seconds > 0;
  const double rate = measured ? static_cast<double>(done) / elapsed_seconds : 0.0;
  const std::string rate_text = measured ? fixed(rate, 1) + " req/s" : std::string("- req/s");
  if (total == 0) return count(static_cast<long long>(done)) + " done  " + rate_text;
  std::string eta = "-";
  if (measured) {
    const double left = static_cast<double>(total - std::min(done, total)) / rate;
    eta = std::to_string(std::llround(left)) + " s";
  }
  return progress_bar(done, total, width) + "  " + rate_text + "  ETA " + eta;
}

std::string comparison_line(const std::string& name, const std::vector<double>& ratios,
                            const RatioSummary& summary) {
  std::string line = name + ", output throughput per round:";
  for (size_t r = 0; r < ratios.size(); ++r) line += (r ? ", " : " ") + fixed(ratios[r], 3);
  line += "; geometric mean " + fixed(summary.geometric_mean, 3);
  if (summary.low && summary.high)
    line += " (95% interval " + fixed(*summary.low, 3) + "-" + fixed(*summary.high, 3) + ")";
  return line + "\n";
}

}  // namespace tandem::loadtest
