// DelayedCommunicator: a TEST-ONLY decorator that makes the links between
// hosts slow, for the latency benchmark (TANDEM_TEST_LINK_DELAY_MS; the
// setting and the model are in link_delay.h, the numbers it produced in
// docs/benchmarks.md). Ranks on the same host talk as they always do.
//
// Point to point, to a rank on another host: send() stamps the message with
// its send time (8 bytes before the payload) and returns at once, as a
// wire would; receive() holds a stamped message until one delay after that
// time. A receive whose timeout ends first returns nothing and keeps the
// message for the next receive. The stamps are read from one machine's
// clock: every rank must be on one machine (the testbed; checked at start).
//
// Collectives over members on more than one host: the operation runs, then
// each rank that receives data from it waits collective_rounds(p) delays
// (all_reduce_sum and all_gather: every rank; gather: the root; broadcast:
// every rank but the root). All members wait at once, so the collective
// takes that much longer, as it would over a slower wire.
//
// split() keeps the hosts: a sub-communicator knows which of its peers are
// remote. A NCCL communicator built over a delayed one runs its float
// collectives on the GPUs, unheld (this is for the CPU testbed).
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <utility>

#include "transport/communicator.h"
#include "transport/link_delay.h"

namespace tandem {

class DelayedCommunicator final : public Communicator {
 public:
  // links: each rank's host (size() entries); one_way_seconds >= 0.
  DelayedCommunicator(std::unique_ptr<Communicator> inner, LinkMap links, double one_way_seconds);

  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }

  void all_reduce_sum(std::span<float> data) override;
  void all_gather(std::span<const float> mine, std::span<float> all) override;
  void gather(std::span<const float> mine, std::span<float> all, int root) override;
  void broadcast(Bytes& bytes, int root) override;

  void send(std::span<const std::byte> bytes, int to, int tag) override;
  bool send_within(std::span<const std::byte> bytes, int to, int tag,
                   double timeout_seconds) override;
  std::optional<Bytes> receive(int from, int tag, double timeout_seconds) override;

  std::unique_ptr<Communicator> split(std::span<const int> ranks) override;
  [[noreturn]] void abort_job(int exit_code) override;

  const LinkMap& links() const { return links_; }
  // The delay this rank has been held by the model so far, in seconds:
  // one delay per remote message received, the rounds of each collective
  // it waited on. (What the model charged, not a measured time.)
  double modelled_delay_seconds() const { return modelled_seconds_; }

 private:
  using Clock = std::chrono::steady_clock;
  struct Held {
    Clock::time_point due;
    Bytes payload;
  };
  // After a collective: `rounds` delays when it crossed hosts and this rank
  // receives data from it.
  void hold_collective(bool receives);
  // bytes after their send time (kStampBytes).
  static Bytes stamped(std::span<const std::byte> bytes);

  std::unique_ptr<Communicator> inner_;
  LinkMap links_;
  double one_way_seconds_;
  Clock::duration one_way_;
  double modelled_seconds_ = 0;
  // Per (from, tag): a message received but not yet due.
  std::map<std::pair<int, int>, Held> held_;
};

// The world as make_world_communicator should return it: every rank reports
// its host, boot id and TANDEM_TEST_LINK_DELAY_MS (collective: one
// broadcast per rank), all agree on the delay (agreed_link_delay), and with
// a delay above 0 the world comes back wrapped, after a log line on rank 0
// saying that a test-only delay is active. Otherwise it comes back as it was.
std::unique_ptr<Communicator> with_test_link_delay(std::unique_ptr<Communicator> world);

}  // namespace tandem
