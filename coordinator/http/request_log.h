// The request log: one line per HTTP request on the server's log, written in
// one piece (common/log_line.h) so that lines from several threads never
// interleave.
//
// A line holds when the request arrived (UTC, ISO 8601 with milliseconds),
// its method, path (never the query string, which may carry secrets),
// status and duration, and for a generation what its RequestRecord holds:
// prompt and completion tokens, time to first token, drafted and accepted
// tokens; a failure's cause as the client was told it. Never a header, a
// key, a prompt or an output.
//
//   text: tandem: request time=2026-01-02T03:04:05.678Z method=POST path=/v1/completions status=200 ...
//   json: {"time":"2026-01-02T03:04:05.678Z","method":"POST","path":"/v1/completions","status":200,...}
#pragma once

#include <chrono>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>

#include "coordinator/http/request_record.h"

namespace tandem::http {

enum class LogFormat { text, json };

// "text" or "json"; nullopt for anything else.
std::optional<LogFormat> log_format_named(std::string_view name);

struct RequestLogEntry {
  std::chrono::system_clock::time_point arrived;
  std::string_view method;  // "-" when the request could not be read that far
  std::string_view path;    // without the query string; "-" likewise
  int status = 0;
  std::chrono::steady_clock::duration duration{};
  const RequestRecord* record = nullptr;  // may be null: nothing beyond the above
};

// The line for `entry`, without its newline (text lines without the
// "tandem: " prefix either).
std::string request_log_line(const RequestLogEntry& entry, LogFormat format);

// Writes `entry`'s line to `out`.
void log_request(std::ostream& out, LogFormat format, const RequestLogEntry& entry);

// The cause a 5xx body gives: an OpenAI error's message, or a status
// object's "status"; empty when the body is neither.
std::string failure_cause(std::string_view body);

}  // namespace tandem::http
