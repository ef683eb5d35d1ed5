#include "coordinator/http/request_log.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <nlohmann/json.hpp>

#include "common/log_line.h"

namespace tandem::http {
namespace {

// Keys in the order written (time first), as a reader scans the line.
using json = nlohmann::ordered_json;

std::string utc_iso8601(std::chrono::system_clock::time_point time) {
  const auto since_epoch =
      std::chrono::duration_cast<std::chrono::milliseconds>(time.time_since_epoch()).count();
  const auto seconds = static_cast<std::time_t>(since_epoch / 1000);
  const int millis = static_cast<int>(since_epoch % 1000);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[64];
  std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", utc.tm_year + 1900,
                utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec, millis);
  return text;
}

// Milliseconds to the microsecond: "12.345".
double millis_of(double seconds) { return static_cast<double>(std::llround(seconds * 1e6)) / 1e3; }

std::string millis_text(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f", seconds * 1000);
  return text;
}

double seconds_of(std::chrono::steady_clock::duration duration) {
  return std::chrono::duration<double>(duration).count();
}

// Quoted, with \" \\ and control bytes escaped: no value can end its line or
// forge another key.
std::string quoted_text(std::string_view value) {
  std::string text = "\"";
  for (const char c : value) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      text += '\\';
      text += c;
    } else if (byte < 0x20 || byte == 0x7f) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", byte);
      text += escaped;
    } else {
      text += c;
    }
  }
  return text + "\"";
}

// A value as key=value takes it: bare when plain, else quoted.
std::string text_value(std::string_view value) {
  const bool plain = !value.empty() && std::all_of(value.begin(), value.end(), [](char c) {
    const auto byte = static_cast<unsigned char>(c);
    return byte > 0x20 && byte < 0x7f && c != '"' && c != '\\' && c != '=';
  });
  return plain ? std::string(value) : quoted_text(value);
}

std::string text_line(const RequestLogEntry& entry) {
  std::string line = "request time=" + utc_iso8601(entry.arrived) +
                     " method=" + text_value(entry.method) + " path=" + text_value(entry.path) +
                     " status=" + std::to_string(entry.status) +
                     " duration_ms=" + millis_text(seconds_of(entry.duration));
  if (entry.record && entry.record->generation) {
    const GenerationRecord& generation = *entry.record->generation;
    line += " prompt_tokens=" + std::to_string(generation.prompt_tokens) +
            " completion_tokens=" + std::to_string(generation.completion_tokens);
    if (generation.time_to_first_token)
      line += " ttft_ms=" + millis_text(*generation.time_to_first_token);
    line += " drafted_tokens=" + std::to_string(generation.drafted_tokens) +
            " accepted_tokens=" + std::to_string(generation.accepted_tokens);
  }
  if (entry.record && !entry.record->error.empty()) line += " error=" + quoted_text(entry.record->error);
  return line;
}

std::string json_line(const RequestLogEntry& entry) {
  json line = {{"time", utc_iso8601(entry.arrived)},
               {"method", entry.method},
               {"path", entry.path},
               {"status", entry.status},
               {"duration_ms", millis_of(seconds_of(entry.duration))}};
  if (entry.record && entry.record->generation) {
    const GenerationRecord& generation = *entry.record->generation;
    line["prompt_tokens"] = generation.prompt_tokens;
    line["completion_tokens"] = generation.completion_tokens;
    if (generation.time_to_first_token) line["ttft_ms"] = millis_of(*generation.time_to_first_token);
    line["drafted_tokens"] = generation.drafted_tokens;
    line["accepted_tokens"] = generation.accepted_tokens;
  }
  if (entry.record && !entry.record->error.empty()) line["error"] = entry.record->error;
  // A path is the client's bytes: invalid UTF-8 is replaced, not thrown on.
  return line.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace

std::optional<LogFormat> log_format_named(std::string_view name) {
  if (name == "text") return LogFormat::text;
  if (name == "json") return LogFormat::json;
  return std::nullopt;
}

std::string request_log_line(const RequestLogEntry& entry, LogFormat format) {
  return format == LogFormat::json ? json_line(entry) : text_line(entry);
}

void log_request(std::ostream& out, LogFormat format, const RequestLogEntry& entry) {
  if (format == LogFormat::json) {
    write_whole_line(out, json_line(entry));
  } else {
    log_line(out, text_line(entry));
  }
}

std::string failure_cause(std::string_view body) {
  const json parsed = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object()) return "";
  const auto error = parsed.find("error");
  if (error != parsed.end() && error->is_object()) {
    const auto message = error->find("message");
    if (message != error->end() && message->is_string()) return message->get<std::string>();
  }
  const auto status = parsed.find("status");
  if (status != parsed.end() && status->is_string()) return "status: " + status->get<std::string>();
  return "";
}

}  // namespace tandem::http
