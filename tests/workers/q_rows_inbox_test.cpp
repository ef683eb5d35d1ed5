// QRowsInbox: the draft rank's q rows by draft step, some of them never
// asked for (blocks drafted ahead behind a wrong guess).
#include "workers/speculation/q_rows_inbox.h"

#include <gtest/gtest.h>

#include <deque>

#include "common/error.h"

namespace tandem {
namespace {

wire::QRows rows_of(uint64_t step, std::vector<uint64_t> sessions) {
  wire::QRows message;
  message.step = step;
  message.vocab = 2;
  for (uint64_t s : sessions) message.entries.push_back({s, {static_cast<float>(step), static_cast<float>(s)}});
  return message;
}

// An inbox over a queue of messages, as MPI would deliver them.
struct Stream {
  std::deque<wire::QRows> queue;
  int received = 0;
  QRowsInbox inbox{[this] {
    ++received;
    wire::QRows next = std::move(queue.front());
    queue.pop_front();
    return next;
  }};
};

TEST(QRowsInbox, SkipsStepsNobodyAsksForAndForgetsThem) {
  Stream s;
  s.queue = {rows_of(1, {10}), rows_of(2, {10, 11}), rows_of(4, {11})};
  EXPECT_EQ(s.inbox.rows(10, 1, 2), (std::vector<float>{1, 10}));
  EXPECT_EQ(s.received, 1);  // only as far as needed
  // Step 2 was drafted ahead and dropped; step 4 is the one asked for.
  EXPECT_EQ(s.inbox.rows(11, 4, 2), (std::vector<float>{4, 11}));
  EXPECT_EQ(s.inbox.held(), 3u);
  s.inbox.drop_through(4);
  EXPECT_EQ(s.inbox.held(), 0u);
}

TEST(QRowsInbox, RowsDeliveredEarlyAreFoundLaterAndStaleOnesAreNotKept) {
  Stream s;
  s.inbox.deliver(rows_of(3, {7}));
  s.inbox.deliver(rows_of(5, {8}));
  EXPECT_EQ(s.inbox.rows(8, 5, 2), (std::vector<float>{5, 8}));
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
}

}  // namespace
}  // namespace tandem
