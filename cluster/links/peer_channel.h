// PeerChannel: the coordinator's and workers' way to talk to each other
// over the world Communicator, with the conventions of this job:
// - everything the coordinator tells a worker (DraftStep, TargetStep,
//   Shutdown) uses Tag::command, so a worker waits in one place;
// - replies use their message type's tag; target shards acknowledge each
//   step on receipt (Tag::ack), so that a silent rank can be named;
// - the coordinator waits for a reply, or for a command to be taken, at
//   most placement.step_timeout_seconds and then throws Error(unavailable)
//   naming the rank (see await() and send_command()).
#pragma once

#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
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
  // A command (Tag::command) from the coordinator to worker `to`, or
  // Error(unavailable) reading "rank N (role) did not take <what> within
  // T s" when the transport has not taken it by the step timeout: a send to
  // a rank that is gone can otherwise wait for ever (see send_within()).
  void send_command(const Bytes& bytes, int to, const std::string& what);
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
  std::string lost_message(int from, const std::string& what,
                           const std::vector<int>& peers) const;
  // Waits as long as it takes (workers waiting for their next command).
  Bytes wait_forever(int from, Tag tag);
  // Any thread: empty, or what the wait under way (await, send_command)
  // would have thrown, when it is still under way grace_seconds after its
  // step timeout passed. MPI itself has then stopped the waiting thread:
  // Open MPI, noticing a lost peer, can hold that thread until mpirun's
  // kill sequence ends, so the wait never gets to time out on its own.
  std::string overdue(double grace_seconds) const;
  // The draft rank's q rows link, on the draft rank and the rank that
  // verifies (nullptr elsewhere, and in jobs without a draft rank).
  QRowsLink* q_rows_link() const { return q_rows_link_; }
  void set_q_rows_link(QRowsLink* link) { q_rows_link_ = link; }

 private:
  using Clock = std::chrono::steady_clock;
  struct Wait {
    int from = 0;
    std::string what;
    std::vector<int> peers;
    Clock::time_point deadline;
  };
  class WaitScope;

  Communicator& world_;
  const ClusterLayout& layout_;
  QRowsLink* q_rows_link_ = nullptr;
  mutable std::mutex wait_mutex_;  // guards wait_, which overdue() reads
  std::optional<Wait> wait_;
};

}  // namespace tandem
