// Tests of tools/loadtest/failure_log.h: the first failures of a sweep are
// listed whole (run, HTTP status, the server's message), the rest counted.
#include "tools/loadtest/failure_log.h"

#include <gtest/gtest.h>

namespace tandem::loadtest {
namespace {

RequestRecord failure(int status, const std::string& error) {
  RequestRecord record;
  record.status = status;
  record.error = error;
  return record;
}

RequestRecord success() {
  RequestRecord record;
  record.ok = true;
  record.status = 200;
  return record;
}

TEST(FailureLog, NothingFailedSaysNothing) {
  FailureLog log;
  log.add_run("run, concurrency 1", {success(), success()});
  EXPECT_EQ(log.failed(), 0u);
  EXPECT_EQ(log.requests(), 2u);
  EXPECT_EQ(log.describe(), "");
}

TEST(FailureLog, ListsTheFirstFiveWithStatusAndMessageAndCountsTheRest) {
  FailureLog log;
  log.add_run("spec on, concurrency 1",
              {success(), failure(500, "model exploded\nstack trace line"), failure(0, "connect: refused")});
  log.add_run("spec on, concurrency 4",
              {failure(400, "'max_tokens' must be >= 1"), failure(200, kEmptyCompletion), success(),
               failure(503, "draining"), failure(500, "sixth"), failure(500, "seventh")});
  EXPECT_EQ(log.failed(), 7u);
  EXPECT_EQ(log.requests(), 9u);
  EXPECT_EQ(log.describe(),
            "7 of 9 requests failed:\n"
            "  [spec on, concurrency 1] HTTP 500: model exploded\n"
            "  [spec on, concurrency 1] no response: connect: refused\n"
            "  [spec on, concurrency 4] HTTP 400: 'max_tokens' must be >= 1\n"
            "  [spec on, concurrency 4] HTTP 200: " + std::string(kEmptyCompletion) + "\n"
            "  [spec on, concurrency 4] HTTP 503: draining\n"
            "  ... and 2 more\n");
}

TEST(FailureLog, CutsALongMessageAndNamesAMissingOne) {
  FailureLog log;
  log.add_run("run", {failure(502, std::string(1000, 'x')), failure(500, "")});
  const std::string text = log.describe();
  EXPECT_NE(text.find("HTTP 502: " + std::string(197, 'x') + "...\n"), std::string::npos) << text;
  EXPECT_NE(text.find("HTTP 500: (no message)\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("more"), std::string::npos);
}

}  // namespace
}  // namespace tandem::loadtest
