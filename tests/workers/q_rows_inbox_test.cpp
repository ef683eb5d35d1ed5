// QRowsInbox: the draft rank's q rows by draft step, some of them never
// asked for (blocks drafted ahead behind a wrong guess).
#include "workers/speculation/q_rows_inbox.h"

#include <gtest/gtest.h>

#include <deque>

#include "common/error.h"

namespace tandem {
namespace {

Backend& cpu() {
  static std::unique_ptr<Backend> backend = make_cpu_backend();
  return *backend;
}

// One row (vocabulary 2) per session: {step, session}, side by side.
ArrivedQRows rows_of(uint64_t step, std::vector<uint64_t> sessions) {
  ArrivedQRows message;
  message.header.step = step;
  message.header.vocab = 2;
  std::vector<float> rows;
  for (uint64_t s : sessions) {
    message.header.entries.push_back({s, 1});
    rows.insert(rows.end(), {static_cast<float>(step), static_cast<float>(s)});
  }
  message.rows = DeviceRows::from_host(cpu(), rows);
  return message;
}

std::vector<float> host(const DeviceRows& rows) { return rows.to_host(); }

// An inbox over a queue of messages, as the q rows link would deliver them.
struct Stream {
  std::deque<ArrivedQRows> queue;
  int received = 0;
  QRowsInbox inbox{[this] {
    ++received;
    ArrivedQRows next = std::move(queue.front());
    queue.pop_front();
    return next;
  }};
};

TEST(QRowsInbox, SkipsStepsNobodyAsksForAndForgetsThem) {
  Stream s;
  s.queue = {rows_of(1, {10}), rows_of(2, {10, 11}), rows_of(4, {11})};
  EXPECT_EQ(host(s.inbox.rows(10, 1, 2)), (std::vector<float>{1, 10}));
  EXPECT_EQ(s.received, 1);  // only as far as needed
  // Step 2 was drafted ahead and dropped; step 4 is the one asked for.
  EXPECT_EQ(host(s.inbox.rows(11, 4, 2)), (std::vector<float>{4, 11}));
  EXPECT_EQ(s.inbox.held(), 3u);
  s.inbox.drop_through(4);
  EXPECT_EQ(s.inbox.held(), 0u);
}

TEST(QRowsInbox, RowsDeliveredEarlyAreFoundLaterAndStaleOnesAreNotKept) {
  Stream s;
  s.inbox.deliver(rows_of(3, {7}));
  s.inbox.deliver(rows_of(5, {8}));
  EXPECT_EQ(host(s.inbox.rows(8, 5, 2)), (std::vector<float>{5, 8}));
  EXPECT_EQ(s.received, 0);
  s.inbox.drop_through(5);
  s.inbox.deliver(rows_of(6, {9}));
  EXPECT_EQ(s.inbox.held(), 1u);
}

TEST(QRowsInbox, AMissingSessionOrAPassedStepIsAnInternalError) {
  Stream s;
  s.queue = {rows_of(2, {10})};
  EXPECT_THROW(s.inbox.rows(99, 2, 2), Error);  // step 2 has no session 99
  EXPECT_THROW(s.inbox.rows(10, 1, 2), Error);  // the stream is past step 1
  EXPECT_THROW(s.inbox.rows(10, 2, 3), Error);  // another vocabulary
  EXPECT_THROW(s.inbox.deliver(rows_of(2, {10})), Error);  // out of order
  ArrivedQRows short_rows = rows_of(3, {10, 11});
  short_rows.rows = short_rows.rows.slice(0, 2);  // one row for two entries
  EXPECT_THROW(s.inbox.deliver(std::move(short_rows)), Error);
}

TEST(QRowsInbox, EachSessionGetsItsOwnRowsOfTheRun) {
  // Entries of several rows each: session 5 has rows 0-1, session 6 rows 2-4.
  ArrivedQRows message;
  message.header.step = 1;
  message.header.vocab = 2;
  message.header.entries = {{5, 2}, {6, 3}};
  const std::vector<float> run = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  message.rows = DeviceRows::from_host(cpu(), run);
  Stream s;
  s.inbox.deliver(std::move(message));
  EXPECT_EQ(host(s.inbox.rows(5, 1, 2)), (std::vector<float>{0, 1, 2, 3}));
  EXPECT_EQ(host(s.inbox.rows(6, 1, 2)), (std::vector<float>{4, 5, 6, 7, 8, 9}));
}

}  // namespace
}  // namespace tandem
