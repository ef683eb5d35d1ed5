// QRowsLink between a draft rank and the verifying rank, as two threads on
// the CPU backend (the host path; the NCCL path is the same calls on a
// communicator whose floats are on the GPU, tested in
// tests/transport/nccl/): messages and their rows arrive whole and in
// order, rows that were not side by side are gathered, the end of the
// stream is seen, and a message whose rows do not add up is refused; rows
// received from outside the verifier's queue of ops (NCCL's stream) wait
// for the ops still queued on their buffer.
#include "cluster/links/q_rows_link.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "common/error.h"
#include "tests/support/forwarding_backend.h"
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

QRows message_of(uint64_t step, std::vector<QRows::Entry> entries) {
  QRows message;
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

// A backend that queues its ops as a GPU's stream does, as far as anyone
// outside can tell: every op joins the queue (allocate: its zero fill), ops
// that hand back host results drain it, and an event drains it up to where
// it was recorded. Its memory is the CPU backend's, so rows stay readable.
class QueueingBackend final : public test_support::ForwardingBackend {
 public:
  using ForwardingBackend::ForwardingBackend;
  bool reads_host_memory() const override { return false; }
  Buffer allocate(size_t count) override {
    ++queued_;
    return inner().allocate(count);
  }
  void add(float* x, const float* y, size_t n) override {
    ++queued_;
    inner().add(x, y, n);
  }
  void upload(std::span<const float> host, float* device) override {
    inner().upload(host, device);
    finished_ = ++queued_;
  }
  std::unique_ptr<Event> record_event() override {
    return std::make_unique<Mark>(*this, queued_);
  }
  int unfinished() const { return queued_ - finished_; }

 private:
  class Mark final : public Event {
   public:
    Mark(QueueingBackend& backend, int at) : backend_(backend), at_(at) {}
    void wait() override { backend_.finished_ = std::max(backend_.finished_, at_); }

   private:
    QueueingBackend& backend_;
    int at_;
  };
  int queued_ = 0;
  int finished_ = 0;
};

// The pair as NCCL is to the link: floats go straight into the receiving
// backend's memory, written by neither backend's queue. Notes, at each
// receive, how many ops were still queued on the receiving backend.
class DeviceFloatsPair final : public test_support::ForwardingCommunicator {
 public:
  DeviceFloatsPair(Communicator& inner, const QueueingBackend* receiver)
      : ForwardingCommunicator(inner), receiver_(receiver) {}
  bool floats_on_device() const override { return true; }
  void receive_floats(std::span<float> data, int from) override {
    unfinished_at_receive.push_back(receiver_->unfinished());
    inner().receive_floats(data, from);
  }
  std::vector<int> unfinished_at_receive;

 private:
  const QueueingBackend* receiver_;
};

TEST(QRowsLink, RowsReceivedFromOutsideTheQueueWaitForTheOpsQueuedOnTheirBuffer) {
  run_ranks(2, [](Communicator& comm) {
    std::unique_ptr<Backend> cpu = make_cpu_backend();
    if (comm.rank() == 0) {
      QRowsLink link(std::make_unique<DeviceFloatsPair>(comm, nullptr));
      for (uint64_t step = 1; step <= 2; ++step) {
        const std::vector<DeviceRows> rows = {DeviceRows::from_host(*cpu, ramp(2 * kVocab, step))};
        link.send(message_of(step, {{3, 2}}), rows);
      }
      link.send_end();
      return;
    }
    QueueingBackend queue(*cpu);
    auto pair = std::make_unique<DeviceFloatsPair>(comm, &queue);
    DeviceFloatsPair& seen = *pair;
    QRowsLink link(std::move(pair));
    ASSERT_TRUE(link.device_to_device());
    link.receive_into(queue);
    // Step 1 lands in a fresh buffer, whose zero fill is queued.
    std::optional<ArrivedQRows> first = link.receive(10);
    ASSERT_TRUE(first.has_value());
    EXPECT_EQ(first->rows.to_host(), ramp(2 * kVocab, 1));
    const float* reused = first->rows.data();
    // Verification reads them (queued), then lets go: step 2 reuses the buffer.
    Buffer sum = queue.allocate(2 * kVocab);
    queue.add(sum.data(), first->rows.data(), 2 * kVocab);
    first.reset();
    std::optional<ArrivedQRows> second = link.receive(10);
    ASSERT_TRUE(second.has_value());
    EXPECT_EQ(second->rows.data(), reused);
    EXPECT_EQ(second->rows.to_host(), ramp(2 * kVocab, 2));
    EXPECT_EQ(seen.unfinished_at_receive, (std::vector<int>{0, 0}));
    EXPECT_TRUE(link.drop_until_end(10));
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
