// FailureLog: every failed request of a whole sweep, so that the load
// generator can say what went wrong and exit non-zero when anything did.
// A count alone hides the cause; the log keeps the first few failures whole
// (which run, HTTP status, the server's error message) and counts the rest.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "tools/loadtest/request_record.h"

namespace tandem::loadtest {

class FailureLog {
 public:
  // How many failures describe() lists one by one.
  static constexpr size_t kShown = 5;

  // Takes the failed records of one run (the successful ones are ignored);
  // run names it in the listing, e.g. "spec on, concurrency 4".
  void add_run(const std::string& run, const std::vector<RequestRecord>& records);

  size_t failed() const { return failed_; }
  size_t requests() const { return requests_; }

  // Empty when nothing failed. Otherwise, one line per failure of the first
  // kShown: "  [run] HTTP 500: MESSAGE" ("no response" for status 0), then
  // "  ... and N more" when there are more, after a heading line
  // "F of R requests failed:".
  std::string describe() const;

 private:
  struct Shown {
    std::string run;
    int status = 0;
    std::string error;
  };
  std::vector<Shown> shown_;
  size_t failed_ = 0;
  size_t requests_ = 0;
};

}  // namespace tandem::loadtest
