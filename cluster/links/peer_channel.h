// PeerChannel: the coordinator's and workers' way to talk to each other
// over the world Communicator, with the conventions of this job:
// - everything the coordinator tells a worker (DraftStep, TargetStep,
//   Shutdown) uses Tag::command, so a worker waits in one place;
// - replies use their message type's tag; target shards acknowledge each
//   step on receipt (Tag::ack), so that a silent rank can be named;
// - the coordinator waits for a reply at most placement.step_timeout_seconds
//   and then throws Error(unavailable) naming the rank (see await()).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "cluster/layout/cluster_layout.h"
#include "cluster/links/q_rows_link.h"
#include "transport/communicator.h"
#include "transport/tags.h"

namespace tandem {

class PeerChannel {
 public:
  PeerChannel(Communicator& world, const ClusterLayout& layout) : world_(world), layout_(layout) {}

  Communicator& world() { return world_; }
  const ClusterLayout& layout() const { return layout_; }

  void send(const Bytes& bytes, int to, Tag tag) { world_.send(bytes, to, tag_value(tag)); }
  // The next message from `from` with `tag`, or Error(unavailable) reading
  // "rank N (role) did not <what> within T s" once the step timeout passes.
  Bytes await(int from, Tag tag, const std::string& what);
  // The same, calling while_waiting() every couple of milliseconds until
  // the message is there (to take other messages meanwhile).
  Bytes await(int from, Tag tag, const std::string& what,
              const std::function<void()>& while_waiting);
  // The same for a reply that `from` can give only after exchanging with
  // `peers` (target rank 0's result needs every shard's all-reduces): a
  // peer lost mid-step leaves `from` waiting too, so the error names them
  // as well ("... it is lost, or one it waits for is: rank 3 (...)").
  Bytes await_after_peers(int from, Tag tag, const std::string& what,
                          const std::vector<int>& peers);
  // Error(unavailable): "rank N (role, on host H) did not <what> within T s
  // ...: it is lost", and the peers it waits for, if any.
  [[noreturn]] void throw_lost(int from, const std::string& what,
                               const std::vector<int>& peers = {}) const;
  // Waits as long as it takes (workers waiting for their next command).
  Bytes wait_forever(int from, Tag tag);
  // The draft rank's q rows link, on the draft rank and the rank that
  // verifies (nullptr elsewhere, and in jobs without a draft rank).
  QRowsLink* q_rows_link() const { return q_rows_link_; }
  void set_q_rows_link(QRowsLink* link) { q_rows_link_ = link; }

 private:
  Communicator& world_;
  const ClusterLayout& layout_;
  QRowsLink* q_rows_link_ = nullptr;
};

}  // namespace tandem
