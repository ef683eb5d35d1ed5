#include "tools/loadtest/server_metrics_scrape.h"

#include <charconv>
#include <optional>

#include "common/error.h"

namespace tandem::loadtest {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t'; }

std::string_view trim(std::string_view text) {
  while (!text.empty() && (is_space(text.front()) || text.front() == '\r')) text.remove_prefix(1);
  while (!text.empty() && (is_space(text.back()) || text.back() == '\r')) text.remove_suffix(1);
  return text;
}

// Where the label set that starts at text[open] ('{') ends: one past its
// '}'. Quoted values may hold '}', ',' and escaped quotes (\"), so braces
// are only counted outside quotes. Returns npos when the set is not closed.
std::size_t end_of_labels(std::string_view text, std::size_t open) {
  bool in_quotes = false;
  for (std::size_t i = open + 1; i < text.size(); ++i) {
    const char c = text[i];
    if (in_quotes) {
      if (c == '\\') {
        ++i;  // the escaped character, whatever it is, does not end the value
      } else if (c == '"') {
        in_quotes = false;
      }
    } else if (c == '"') {
      in_quotes = true;
    } else if (c == '}') {
      return i + 1;
    }
  }
  return std::string_view::npos;
}

// A sample value: a decimal or exponent number, +Inf, -Inf or NaN (Go's
// spellings; from_chars reads "Inf" and "NaN" but not a leading '+').
bool parse_value(std::string_view token, double& value) {
  if (token.size() > 1 && token.front() == '+' && token[1] != '-') token.remove_prefix(1);
  const auto result = std::from_chars(token.data(), token.data() + token.size(), value);
  return result.ec == std::errc() && result.ptr == token.data() + token.size();
}

// `series` with its model_name label taken out (`name{model_name="m",a="b"}`
// becomes `name{a="b"}`, `name{model_name="m"}` becomes `name`); nullopt
// when it has none.
std::optional<std::string> without_model_name(std::string_view series) {
  const std::size_t open = series.find('{');
  if (open == std::string_view::npos) return std::nullopt;
  constexpr std::string_view kLabel = "model_name=\"";
  std::size_t start = open + 1;
  while (start < series.size() && series.substr(start, kLabel.size()) != kLabel) {
    // Skip one label: its name, '=', its quoted value (escapes kept), ','.
    std::size_t i = series.find('"', start);
    if (i == std::string_view::npos) return std::nullopt;
    for (++i; i < series.size() && series[i] != '"'; ++i)
      if (series[i] == '\\') ++i;
    start = i + 2;  // past the closing quote and the comma
  }
  if (start >= series.size()) return std::nullopt;
  std::size_t end = start + kLabel.size();
  for (; end < series.size() && series[end] != '"'; ++end)
    if (series[end] == '\\') ++end;
  ++end;  // past the closing quote
  std::string bare(series.substr(0, start));
  if (end < series.size() && series[end] == ',') {
    bare += series.substr(end + 1);
  } else {
    if (bare.back() == ',') bare.pop_back();  // it was the last label
    bare += series.substr(end);
  }
  if (bare.size() >= 2 && bare.substr(bare.size() - 2) == "{}") bare.resize(bare.size() - 2);
  return bare;
}

double counter_increase(const std::map<std::string, double>& before,
                        const std::map<std::string, double>& after, const std::string& name) {
  const auto old_value = before.find(name);
  const auto new_value = after.find(name);
  const double from = old_value == before.end() ? 0 : old_value->second;
  const double to = new_value == after.end() ? 0 : new_value->second;
  return to >= from ? to - from : to;
}

double ratio(double numerator, double denominator) { return denominator == 0 ? 0 : numerator / denominator; }

}  // namespace

std::map<std::string, double> parse_prometheus(std::string_view text) {
  std::map<std::string, double> samples;
  std::size_t line_number = 0;
  while (!text.empty()) {
    ++line_number;
    const std::size_t newline = text.find('\n');
    const std::string_view line = trim(text.substr(0, newline));
    text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
    if (line.empty() || line.front() == '#') continue;

    const auto malformed = [&](const std::string& what) {
      return Error(ErrorKind::corrupt_data, "metrics line " + std::to_string(line_number) + ": " + what +
                                                " in \"" + std::string(line) +
                                                "\"; is the URL a Prometheus /metrics page?");
    };
    std::size_t series_end = 0;
    while (series_end < line.size() && line[series_end] != '{' && !is_space(line[series_end])) ++series_end;
    if (series_end == 0) throw malformed("no metric name");
    if (series_end < line.size() && line[series_end] == '{') {
      series_end = end_of_labels(line, series_end);
      if (series_end == std::string_view::npos) throw malformed("labels not closed with '}'");
    }
    std::string_view rest = trim(line.substr(series_end));
    // The value, then an optional timestamp (ignored).
    const std::string_view value_token = rest.substr(0, rest.find_first_of(" \t"));
    double value = 0;
    if (value_token.empty()) throw malformed("no value");
    if (!parse_value(value_token, value)) throw malformed("value \"" + std::string(value_token) + "\" is not a number");
    const std::string_view series = line.substr(0, series_end);
    samples[std::string(series)] = value;
    if (const std::optional<std::string> bare = without_model_name(series)) samples[*bare] = value;
  }
  return samples;
}

double SpeculationDelta::acceptance_rate() const { return ratio(accepted_tokens, draft_tokens); }
double SpeculationDelta::accepted_per_draft() const { return ratio(accepted_tokens, drafts); }
double SpeculationDelta::tokens_per_target_step() const { return ratio(generation_tokens, target_steps); }
double SpeculationDelta::draft_busy_fraction() const { return ratio(draft_busy_seconds, step_seconds); }
double SpeculationDelta::target_busy_fraction() const { return ratio(target_seconds, step_seconds); }
double SpeculationDelta::ahead_hit_rate() const { return ratio(ahead_hits, ahead_hits + ahead_misses); }

SpeculationDelta speculation_delta(const std::map<std::string, double>& before,
                                   const std::map<std::string, double>& after) {
  SpeculationDelta delta;
  delta.drafts = counter_increase(before, after, "tandem_spec_decode_num_drafts_total");
  delta.draft_tokens = counter_increase(before, after, "tandem_spec_decode_num_draft_tokens_total");
  delta.accepted_tokens = counter_increase(before, after, "tandem_spec_decode_num_accepted_tokens_total");
  delta.target_steps = counter_increase(before, after, "tandem_target_steps_total");
  delta.generation_tokens = counter_increase(before, after, "tandem_generation_tokens_total");
  delta.step_seconds = counter_increase(before, after, "tandem_engine_step_seconds_total");
  delta.draft_busy_seconds = counter_increase(before, after, "tandem_draft_busy_seconds_total");
  delta.target_seconds = counter_increase(before, after, "tandem_target_seconds_total");
  delta.ahead_hits = counter_increase(before, after, "tandem_draft_ahead_total{result=\"hit\"}");
  delta.ahead_misses = counter_increase(before, after, "tandem_draft_ahead_total{result=\"miss\"}");
  delta.pipelined_steps =
      counter_increase(before, after, "tandem_pipeline_steps_total{shape=\"ahead\"}") +
      counter_increase(before, after, "tandem_pipeline_steps_total{shape=\"pingpong\"}");
  return delta;
}

double PrefixCacheDelta::target_hit_rate() const { return ratio(target_hits, target_queries); }
double PrefixCacheDelta::draft_hit_rate() const { return ratio(draft_hits, draft_queries); }

PrefixCacheDelta prefix_cache_delta(const std::map<std::string, double>& before,
                                    const std::map<std::string, double>& after) {
  const auto increase = [&](const std::string& counter, const std::string& model) {
    return counter_increase(before, after, counter + "{model=\"" + model + "\"}");
  };
  PrefixCacheDelta delta;
  delta.target_queries = increase("tandem_prefix_cache_queries_total", "target");
  delta.target_hits = increase("tandem_prefix_cache_hits_total", "target");
  delta.draft_queries = increase("tandem_prefix_cache_queries_total", "draft");
  delta.draft_hits = increase("tandem_prefix_cache_hits_total", "draft");
  return delta;
}

}  // namespace tandem::loadtest
