// RemoteDrafter: the draft model on its own rank, seen by the engine as a
// Drafter named "model".
//
// The coordinator sends only tokens: for each session the committed tokens
// the draft rank has not seen yet (committed text only grows, so the draft
// rank's copy is always a prefix), γ and the sampling parameters. It gets
// back the drafted tokens; the q rows of sampled sessions go from the draft
// rank straight to target rank 0 (DESIGN.md, "One step"), so proposals
// carry q_at_draft_rank instead of rows. Sessions that ended are released
// on the draft rank with the next DraftStep.
#pragma once

#include <unordered_map>
#include <vector>

#include "coordinator/cluster/peer_channel.h"
#include "workers/speculation/drafter.h"

namespace tandem {

class RemoteDrafter final : public Drafter {
 public:
  explicit RemoteDrafter(PeerChannel& channel) : channel_(channel) {}
  std::string name() const override { return "model"; }
  void propose(std::span<const DraftRequest> requests,
               std::vector<DraftProposal>& proposals) override;
  void commit(SessionKey, int) override {}  // the next DraftStep carries what changed
  void release(SessionKey session) override;
  double last_seconds() const override { return last_seconds_; }

 private:
  PeerChannel& channel_;
  std::unordered_map<SessionKey, int32_t> held_;  // committed tokens the draft rank has
  std::vector<uint64_t> released_;
  uint64_t steps_ = 0;
  double last_seconds_ = 0;
};

}  // namespace tandem
