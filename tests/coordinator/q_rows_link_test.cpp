// QRowsLink between a draft rank and the verifying rank, as two threads on
// the CPU backend (the host path; the NCCL path is the same calls on a
// communicator whose floats are on the GPU, tested in
// tests/transport/nccl/): messages and their rows arrive whole and in
// order, rows that were not side by side are gathered, the end of the
// stream is seen, and a message whose rows do not add up is refused.
#include "coordinator/cluster/q_rows_link.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "common/error.h"
#include "tests/support/forwarding_communicator.h"
#include "tests/support/thread_communicator.h"

namespace tandem {
namespace {

using test_support::run_ranks;

constexpr int kVocab = 3;

// A link over a non-owning handle of the thread communicator.
using Borrowed = test_support::ForwardingCommunicator;

std::vector<float> ramp(size_t n, float from) {
  std::vector<float> values(n);
  for (size_t i = 0; i < n; ++i) values[i] = from + static_cast<float>(i);
  return values;
}

wire::QRows message_of(uint64_t step, std::vector<wire::QRows::Entry> entries) {
  wire::QRows message;
  message.step = step;
  message.vocab = kVocab;
  message.entries = std::move(entries);
  return message;
}

TEST(QRowsLink, RowsArriveWholeInOrderAndTheEndIsSeen) {
  run_ranks(2, [](Communicator& comm) {
    std::unique_ptr<Backend> backend = make_cpu_backend();
    QRowsLink link(std::make_unique<Borrowed>(comm));
    EXPECT_FALSE(link.device_to_device());
    if (comm.rank() == 0) {  // the draft rank
      // Step 1: two sessions' rows side by side in one buffer (as the model
      // drafter leaves them): 2 rows and 1 row.
      const DeviceRows run = DeviceRows::from_host(*backend, ramp(3 * kVocab, 0));
      const std::vector<DeviceRows> step1 = {run.slice(0, 2 * kVocab), run.slice(2 * kVocab, kVocab)};
      link.send(message_of(1, {{5, 2}, {6, 1}}), step1);
      // Step 4: rows from two buffers: two transfers, side by side again there.
      const std::vector<DeviceRows> step4 = {DeviceRows::from_host(*backend, ramp(kVocab, 100)),
                                             DeviceRows::from_host(*backend, ramp(kVocab, 200))};
      link.send(message_of(4, {{6, 1}, {7, 1}}), step4);
      link.send_end();
      return;
    }
    link.receive_into(*backend);
    std::optional<ArrivedQRows> first = link.receive(10);
    ASSERT_TRUE(first.has_value());
    EXPECT_EQ(first->header.step, 1u);
    EXPECT_EQ(first->header.runs, (std::vector<int32_t>{2}));  // one transfer
    ASSERT_EQ(first->header.entries.size(), 2u);
    EXPECT_EQ(first->header.entries[1].session, 6u);
    EXPECT_EQ(first->rows.backend(), backend.get());
    EXPECT_EQ(first->rows.to_host(), ramp(3 * kVocab, 0));
    std::optional<ArrivedQRows> second = link.receive(10);
    ASSERT_TRUE(second.has_value());
    EXPECT_EQ(second->header.step, 4u);
    EXPECT_EQ(second->header.runs, (std::vector<int32_t>{1, 1}));  // two buffers, two transfers
    std::vector<float> expected = ramp(kVocab, 100);
    for (float x : ramp(kVocab, 200)) expected.push_back(x);
    EXPECT_EQ(second->rows.to_host(), expected);
    EXPECT_FALSE(link.ended());
    EXPECT_EQ(link.receive(10), std::nullopt);
    EXPECT_TRUE(link.ended());
    EXPECT_TRUE(link.drop_until_end(0.1));  // already ended
    // Rows received earlier stay readable while held.
    EXPECT_EQ(first->rows.slice(2 * kVocab, kVocab).to_host(), ramp(kVocab, 2 * kVocab));
  });
}

TEST(QRowsLink, PipelinedSlicesOfSeveralBuffersArriveSideBySide) {
  // A target step's blocks as the engine holds them: slices (first row
  // dropped, drafted ahead) of two draft calls' buffers, out of order, and
  // a block of another buffer in between.
  run_ranks(2, [](Communicator& comm) {
    std::unique_ptr<Backend> backend = make_cpu_backend();
    QRowsLink link(std::make_unique<Borrowed>(comm));
    const DeviceRows a = DeviceRows::from_host(*backend, ramp(4 * kVocab, 0));
    const DeviceRows b = DeviceRows::from_host(*backend, ramp(2 * kVocab, 100));
    const std::vector<DeviceRows> blocks = {a.slice(kVocab, kVocab), a.slice(2 * kVocab, 2 * kVocab),
                                            b, a.slice(0, kVocab)};
    if (comm.rank() == 0) {
      link.send(message_of(7, {{1, 1}, {2, 2}, {3, 2}, {4, 1}}), blocks);
      return;
    }
    link.receive_into(*backend);
    std::optional<ArrivedQRows> got = link.receive(10);
    ASSERT_TRUE(got.has_value());
    EXPECT_EQ(got->header.runs, (std::vector<int32_t>{2, 1, 1}));
    std::vector<float> expected;
    for (const DeviceRows& block : blocks)
      for (float x : block.to_host()) expected.push_back(x);
    EXPECT_EQ(got->rows.to_host(), expected);
  });
}

TEST(QRowsLink, DropUntilEndTakesWhatNobodyNeededAndTimesOutWithoutAnEnd) {
  run_ranks(2, [](Communicator& comm) {
    std::unique_ptr<Backend> backend = make_cpu_backend();
    QRowsLink link(std::make_unique<Borrowed>(comm));
    if (comm.rank() == 0) {
      for (uint64_t step = 1; step <= 3; ++step) {
        const std::vector<DeviceRows> rows = {DeviceRows::from_host(*backend, ramp(kVocab, 0))};
        link.send(message_of(step, {{9, 1}}), rows);
      }
      link.send_end();
      return;
    }
    link.receive_into(*backend);
    EXPECT_TRUE(link.drop_until_end(10));
    EXPECT_EQ(link.receive(0), std::nullopt);  // nothing after the end
  });
  run_ranks(2, [](Communicator& comm) {
    std::unique_ptr<Backend> backend = make_cpu_backend();
    QRowsLink link(std::make_unique<Borrowed>(comm));
    if (comm.rank() == 1) {
      link.receive_into(*backend);
      EXPECT_FALSE(link.drop_until_end(0.2));  // the draft rank never ends
    }
  });
}

TEST(QRowsLink, RowsThatDoNotAddUpAreRefusedBeforeAnythingIsSent) {
  run_ranks(2, [](Communicator& comm) {
    std::unique_ptr<Backend> backend = make_cpu_backend();
    QRowsLink link(std::make_unique<Borrowed>(comm));
    if (comm.rank() == 1) {  // nothing came
      EXPECT_EQ(comm.receive(0, wire::tag_of(wire::MessageType::q_rows), 0.2), std::nullopt);
      return;
    }
    const std::vector<DeviceRows> one_row = {DeviceRows::from_host(*backend, ramp(kVocab, 0))};
    EXPECT_THAT([&] { link.send(message_of(1, {{5, 2}}), one_row); },
                testing::ThrowsMessage<Error>(testing::HasSubstr("names 6 floats of rows, 3 are given")));
    EXPECT_THROW(link.send(message_of(1, {{5, 1}, {6, 1}}), one_row), Error);  // 2 entries, 1 set
  });
}

TEST(QRowsLink, ReceivingBeforeReceiveIntoIsAnInternalError) {
  run_ranks(2, [](Communicator& comm) {
    QRowsLink link(std::make_unique<Borrowed>(comm));
    if (comm.rank() == 1) {
      EXPECT_THROW(link.receive(0), Error);
    }
  });
}

}  // namespace
}  // namespace tandem
