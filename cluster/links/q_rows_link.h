// QRowsLink: how the draft's q rows reach the rank that verifies its blocks
// (target rank 0, which is the coordinator when the target runs in its
// process) when the two are different processes: a draft rank of its own,
// or a draft in the coordinator's process with the target on other ranks.
// Below, "the draft rank" is whichever of the two drafts.
//
// Per draft step that drafted for sampled sessions: the QRows message (which
// sessions, how many rows each) with its tag, then the rows themselves as
// runs of floats (one per stretch of entries whose rows lie side by side:
// one for all of a model drafter's call), both over a communicator of just
// the two ranks. Where
// both hold GPUs that NCCL can join (the cuda backend, a build with NCCL,
// and not one GPU shared by both ranks) the run goes GPU to GPU with
// ncclSend/ncclRecv and never touches either host; otherwise over the host
// communicator (the draft downloads its rows, the verifier uploads them;
// on the CPU backend both are plain memory).
//
// Sends and receives are blocking like the rest of the job's messages: the
// draft rank waits in send() until the verifier takes the rows, so the
// verifier takes them as they come (between steps, and while it waits for
// other messages), and after Shutdown the draft rank ends its stream with an
// empty QRows that the verifier takes rows until (drop_until_end()).
#pragma once

#include <memory>
#include <optional>
#include <span>

#include "cluster/layout/cluster_layout.h"
#include "cluster/wire/messages.h"
#include "kernels/device_rows.h"
#include "transport/communicator.h"
#include "workers/speculation/q_rows_inbox.h"

namespace tandem {

class QRowsLink {
 public:
  // Over `pair`: rank 0 the draft rank, rank 1 the verifying rank.
  explicit QRowsLink(std::unique_ptr<Communicator> pair);

  // Collective over the job's world communicator: every rank calls it, at
  // the same point among its other splits. A job whose draft runs in
  // another process than target rank 0 gives those two ranks a link (NCCL
  // where they can use it, see above); every other rank, and every rank of
  // any other job, gets nullptr.
  static std::unique_ptr<QRowsLink> connect(Communicator& world, const ClusterLayout& layout,
                                            bool has_draft);

  // Whether the rows go GPU to GPU (NCCL).
  bool device_to_device() const { return pair_->floats_on_device(); }
  // Whether this end drafts (sends) rather than verifies (receives).
  bool sends() const { return pair_->rank() == kDraft; }

  // The draft rank: one draft step's message and its entries' rows, one
  // DeviceRows per entry (finished, in the drafter's backend, in entry
  // order); the message's runs are filled in here. An empty message ends
  // the stream.
  void send(wire::QRows message, std::span<const DeviceRows> rows);
  void send_end();

  // The verifying rank: its backend, where received rows go. Call once
  // before receive().
  void receive_into(Backend& backend);
  // The next draft step's rows, or std::nullopt when none came within
  // timeout_seconds (negative: wait as long as it takes) or the stream has
  // ended (ended() then says so).
  std::optional<ArrivedQRows> receive(double timeout_seconds);
  bool ended() const { return ended_; }
  // At shutdown: takes and drops rows until the stream's end. False if it
  // did not come within timeout_seconds.
  bool drop_until_end(double timeout_seconds);

 private:
  static constexpr int kDraft = 0;
  static constexpr int kVerifier = 1;

  std::unique_ptr<Communicator> pair_;
  std::unique_ptr<RowsPool> pool_;  // the verifier's: received rows
  std::vector<float> staged_;       // host copies, where a backend reads no host memory
  bool ended_ = false;
};

}  // namespace tandem
