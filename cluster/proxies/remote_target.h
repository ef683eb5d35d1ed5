// RemoteTarget: the engine's TargetExecutor when the target runs on other
// ranks (tensor-parallel or not). Each step goes to every rank of the TP
// group; each acknowledges it on receipt and target rank 0 returns the
// verification result. A rank that stays silent past the step timeout is
// lost: run() throws Error(unavailable) naming it, and every later run()
// throws the same at once (the group cannot recover a missing shard).
//
// The q rows of a drafter in this process go to target rank 0 alone over
// the q rows link (GPU to GPU with NCCL) just before the step, named by the
// step's number as if a draft rank had sent them.
#pragma once

#include <optional>
#include <string>

#include "cluster/links/peer_channel.h"
#include "cluster/wire/messages.h"
#include "workers/speculation/target_executor.h"

namespace tandem {

class RemoteTarget final : public TargetExecutor {
 public:
  RemoteTarget(PeerChannel& channel, int vocab) : channel_(channel), vocab_(vocab) {}
  using TargetExecutor::run;
  void run(wire::TargetStep& step, std::span<const DeviceRows> local_q,
           wire::TargetResult& result) override;
  // Why the group is lost; empty while it answers.
  const std::string& lost() const { return lost_; }

 private:
  // Sends the step's local rows over the link; the step then names them.
  void send_q_rows(wire::TargetStep& step, std::span<const DeviceRows> local_q);

  PeerChannel& channel_;
  int vocab_;
  std::string lost_;
};

}  // namespace tandem
