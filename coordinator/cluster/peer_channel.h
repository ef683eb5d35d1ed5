// PeerChannel: the coordinator's and workers' way to talk to each other
// over the world Communicator, with the conventions of this job:
// - everything the coordinator tells a worker (DraftStep, TargetStep,
//   Shutdown) uses one command tag, so a worker waits in one place;
// - replies use their message type's tag; target shards acknowledge each
//   step on receipt (kAckTag), so that a silent rank can be named;
// - the coordinator waits for a reply at most placement.step_timeout_seconds
//   and then throws Error(unavailable) naming the rank (see await()).
#pragma once

#include <functional>
#include <string>

#include "coordinator/cluster/cluster_layout.h"
#include "transport/communicator.h"
#include "transport/messages.h"

namespace tandem {

constexpr int kCommandTag = 50;
constexpr int kAckTag = 51;

class PeerChannel {
 public:
  PeerChannel(Communicator& world, const ClusterLayout& layout) : world_(world), layout_(layout) {}

  Communicator& world() { return world_; }
  const ClusterLayout& layout() const { return layout_; }

  void send(const Bytes& bytes, int to, int tag) { world_.send(bytes, to, tag); }
  // The next message from `from` with `tag`, or Error(unavailable) reading
  // "rank N (role) did not <what> within T s" once the step timeout passes.
  Bytes await(int from, int tag, const std::string& what);
  // The same, calling while_waiting() every couple of milliseconds until
  // the message is there (to take other messages meanwhile).
  Bytes await(int from, int tag, const std::string& what,
              const std::function<void()>& while_waiting);
  // Waits as long as it takes (workers waiting for their next command).
  Bytes wait_forever(int from, int tag);
  // At shutdown, on the rank that takes the draft rank's q rows: takes and
  // drops them until the empty QRows that ends them (see wire::QRows).
  // False if it did not come within the step timeout.
  bool drop_q_rows_until_end();

 private:
  Communicator& world_;
  const ClusterLayout& layout_;
};

}  // namespace tandem
