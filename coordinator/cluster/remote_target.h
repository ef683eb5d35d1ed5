// RemoteTarget: the engine's TargetExecutor when the target runs on other
// ranks (tensor-parallel or not). Each step goes to every rank of the TP
// group; each acknowledges it on receipt and target rank 0 returns the
// verification result. A rank that stays silent past the step timeout is
// lost: run() throws Error(unavailable) naming it, and every later run()
// throws the same at once (the group cannot recover a missing shard).
#pragma once

#include <optional>
#include <string>

#include "coordinator/cluster/peer_channel.h"
#include "workers/speculation/target_executor.h"

namespace tandem {

class RemoteTarget final : public TargetExecutor {
 public:
  explicit RemoteTarget(PeerChannel& channel) : channel_(channel) {}
  void run(wire::TargetStep& step, wire::TargetResult& result) override;
  // Why the group is lost; empty while it answers.
  const std::string& lost() const { return lost_; }

 private:
  PeerChannel& channel_;
  std::string lost_;
};

}  // namespace tandem
