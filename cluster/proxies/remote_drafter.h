// RemoteDrafter: the draft model on its own rank, seen by the engine as a
// Drafter named "model".
//
// The coordinator sends only tokens: for each session how many of the
// tokens the draft rank holds still stand, and the ones after them, γ and
// the sampling parameters. (A request drafting ahead of a block under
// verification includes that block's drafts; whatever of them verification
// rejected is taken back by the next request's shorter common prefix.) It
// gets back the drafted tokens; the q rows of sampled sessions go from the
// draft rank straight to target rank 0 (docs/design.md, "One step"), so
// proposals carry q_at_draft_rank and the draft step instead of rows.
// Sessions that ended are released on the draft rank with the next
// DraftStep. Each request's cache_salt goes with it, for the draft rank's
// prefix cache (when its deployment turned one on), whose counters come
// back with every reply.
//
// Pipelined: begin_propose() sends the DraftStep and returns, and
// finish_propose() waits for the reply, so the draft rank drafts while the
// engine thread runs a target pass (all MPI stays on the engine thread).
#pragma once

#include <functional>
#include <unordered_map>
#include <vector>

#include "cluster/links/peer_channel.h"
#include "cluster/wire/messages.h"
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
  // The draft rank's prefix cache, as of its last reply.
  PrefixCacheCounters prefix_counters() const override { return prefix_counters_; }

  // With the target in the coordinator's own process, the q rows the draft
  // rank sends come here too: while this drafter waits for a reply it calls
  // take() every couple of milliseconds, which hands the rows that came to
  // the target runner's inbox, so the draft rank is never left waiting to
  // hand over rows nobody asked for yet.
  void take_q_rows(std::function<void()> take) { take_q_rows_ = std::move(take); }

  bool overlaps() const override { return true; }
  void begin_propose(std::span<const DraftRequest> requests) override;
  void finish_propose(std::vector<DraftProposal>& proposals) override;

 private:
  PeerChannel& channel_;
  std::unordered_map<SessionKey, std::vector<int32_t>> held_;  // the tokens the draft rank has
  std::vector<uint64_t> released_;
  uint64_t steps_ = 0;
  double last_seconds_ = 0;
  PrefixCacheCounters prefix_counters_;
  // The draft step in flight between begin and finish.
  std::vector<bool> in_flight_sampled_;  // per request: its q rows stay at the draft rank
  std::function<void()> take_q_rows_;
};

}  // namespace tandem
