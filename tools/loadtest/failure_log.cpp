// The sweep's failed requests, listed and counted: see failure_log.h.
#include "tools/loadtest/failure_log.h"

namespace tandem::loadtest {
namespace {

// A message's first line, cut short: a server's HTML error page or a long
// stack trace would drown the other failures.
constexpr size_t kMessageWidth = 200;
std::string one_line(const std::string& message) {
  std::string text = message.substr(0, message.find('\n'));
  if (text.size() > kMessageWidth) text = text.substr(0, kMessageWidth - 3) + "...";
  return text.empty() ? std::string("(no message)") : text;
}

}  // namespace

void FailureLog::add_run(const std::string& run, const std::vector<RequestRecord>& records) {
  requests_ += records.size();
  for (const RequestRecord& record : records) {
    if (record.ok) continue;
    ++failed_;
    if (shown_.size() < kShown) shown_.push_back({run, record.status, record.error});
  }
}

std::string FailureLog::describe() const {
  if (failed_ == 0) return "";
  std::string out = std::to_string(failed_) + " of " + std::to_string(requests_) +
                    " requests failed:\n";
  for (const Shown& failure : shown_) {
    const std::string status =
        failure.status == 0 ? std::string("no response") : "HTTP " + std::to_string(failure.status);
    out += "  [" + failure.run + "] " + status + ": " + one_line(failure.error) + "\n";
  }
  if (failed_ > shown_.size())
    out += "  ... and " + std::to_string(failed_ - shown_.size()) + " more\n";
  return out;
}

}  // namespace tandem::loadtest
