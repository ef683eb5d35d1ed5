// LocalCommunicator: the Communicator of a job with one rank.
//
// When every role lives in one process (no MPI launcher), the engine still
// talks through a Communicator so that the same code serves both layouts.
// With one rank, collectives are copies, and a message can only be sent to
// oneself: it waits in a queue per tag until received.
#pragma once

#include <deque>
#include <map>

#include "transport/communicator.h"

namespace tandem {

class LocalCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }

  void all_reduce_sum(std::span<float> data) override;
  void all_gather(std::span<const float> mine, std::span<float> all) override;
  void gather(std::span<const float> mine, std::span<float> all, int root) override;
  void broadcast(Bytes& bytes, int root) override;

  void send(std::span<const std::byte> bytes, int to, int tag) override;
  // Never waits: with no other rank, a message not queued now never comes,
  // so this returns std::nullopt at once, whatever the timeout (even a
  // negative one, where waiting forever would only hang the process).
  std::optional<Bytes> receive(int from, int tag, double timeout_seconds) override;

  // split({0}) gives a new LocalCommunicator (with its own, empty queues);
  // split({}) gives nullptr, as for any rank left out.
  std::unique_ptr<Communicator> split(std::span<const int> ranks) override;

  // Flushes stderr and ends the process with exit_code, running no
  // destructors or atexit handlers (the same as MPI_Abort does to a rank).
  [[noreturn]] void abort_job(int exit_code) override;

 private:
  std::map<int, std::deque<Bytes>> queues_;  // by tag, oldest first
};

}  // namespace tandem
