// Drafter: whatever proposes the γ tokens a target step verifies.
//
// Implementations: ModelDrafter (a small Llama, the paper's M_q), NgramDrafter
// (prompt lookup: copy what followed the longest earlier match of the
// context's suffix; the paper's §3.6 negligible-cost drafter) and NoDrafter
// (plain decoding through the same engine path). A drafter keeps whatever
// per-session state it needs (a KV cache, an index) keyed by session id, and
// is told after every step how long the committed sequence now is.
// Not thread-safe: the engine thread owns its drafter.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "kernels/device_rows.h"
#include "kernels/sampling_params.h"
#include "workers/kv_block_pool.h"
#include "workers/speculation/logit_processing.h"
#include "workers/speculation/session_fault.h"

namespace tandem {

using SessionKey = uint64_t;

// One session's request for this step.
struct DraftRequest {
  SessionKey session = 0;
  std::span<const int32_t> tokens;  // the committed sequence: prompt + output so far
  int gamma = 0;                    // tokens wanted; a drafter may propose fewer
  SamplingParams sampling;
  // The session's logit processing (null: none), applied to the draft's
  // rows as to the target's; tokens is its history.
  const LogitProcessing* processing = nullptr;
  // The request's cache_salt (cache_salt_hash; 0: none): a drafter with a
  // prefix cache reuses only blocks cached under the same salt.
  uint64_t cache_salt = 0;
};

// What a drafter proposes for one request.
struct DraftProposal {
  std::vector<int32_t> tokens;  // x_1..x_γ' (γ' <= the requested γ)
  // (γ', V) standardized rows q_1..q_γ' each x_j was drawn from, in the
  // drafter's backend memory; empty when the drafter is deterministic (q
  // one-hot at x_j) or the session is greedy. (Verification of a gumbel
  // block does not read them.)
  DeviceRows q;
  // The rows exist but went from the draft rank straight to target rank 0
  // (a drafter on its own rank); q stays empty here. They are rows
  // q_first_row.. of that rank's QRows for draft step q_step.
  bool q_at_draft_rank = false;
  uint64_t q_step = 0;
  int q_first_row = 0;
  // The request's own fault (its sampling parameters, its non-finite draft
  // logits): no tokens then, and the engine ends that session alone.
  SessionFault fault = SessionFault::none;
};

class Drafter {
 public:
  virtual ~Drafter() = default;
  virtual std::string name() const = 0;
  // Proposals for every request at once (batched); proposals[i] answers
  // requests[i]. Randomness: x_j at absolute position p is drawn with
  // philox_uniform(seed, p, draft_sample), or for a session with the gumbel
  // coupling by the Gumbel race with NoiseKey{seed, p}, the target's own
  // noise at p (kernels/philox.h). A request's tokens may run past
  // the committed text (drafting ahead of a block under verification): the
  // drafter keeps what it fed until commit() says how much of it stands.
  // The proposals' q rows are written when propose() returns, so another
  // backend or thread may read them. A request's own fault (sampling
  // parameters the ops refuse, draft logits that are not finite) is its
  // proposal's `fault`, never an exception: the other requests' proposals
  // are what they would be without it.
  virtual void propose(std::span<const DraftRequest> requests,
                       std::vector<DraftProposal>& proposals) = 0;

  // Pipelined drafting: begin_propose() starts a propose() and
  // finish_propose() returns its proposals. A drafter that can work apart
  // from the engine thread (a draft rank, a draft GPU of its own) returns
  // from begin_propose() at once and says so with overlaps(); the engine
  // then runs a target pass in between. Between the two calls the engine
  // calls nothing else on the drafter, and keeps the requests' tokens alive.
  // The default runs propose() inside begin_propose().
  virtual bool overlaps() const { return false; }
  virtual void begin_propose(std::span<const DraftRequest> requests) {
    propose(requests, pending_);
  }
  virtual void finish_propose(std::vector<DraftProposal>& proposals) {
    proposals = std::move(pending_);
    pending_.clear();
  }
  // The session's committed sequence is now `length` tokens long (what was
  // proposed beyond the accepted prefix is gone).
  virtual void commit(SessionKey session, int length) = 0;
  // The session ended: free everything it held.
  virtual void release(SessionKey session) = 0;
  // Seconds of the last propose() call, for the cost ratio c.
  virtual double last_seconds() const = 0;
  // The drafter's own prefix cache (a draft model's KV): tokens looked up
  // and found, since it was built. Zero for drafters without one.
  virtual PrefixCacheCounters prefix_counters() const { return {}; }

 private:
  std::vector<DraftProposal> pending_;  // the default begin/finish
};

// Plain decoding: proposes nothing, so every step is one target token.
class NoDrafter final : public Drafter {
 public:
  std::string name() const override { return "none"; }
  void propose(std::span<const DraftRequest> requests,
               std::vector<DraftProposal>& proposals) override {
    proposals.assign(requests.size(), DraftProposal{});
  }
  void commit(SessionKey, int) override {}
  void release(SessionKey) override {}
  double last_seconds() const override { return 0; }
};

}  // namespace tandem
