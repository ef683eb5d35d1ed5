// ModelDrafter: a small Llama (the paper's M_q) drafting γ tokens per session
// with batched forward passes: one pass that catches each session's draft
// cache up with its committed tokens and yields x_1, then one pass per
// further token for the sessions that still want one. Sampled sessions draw
// from their standardized rows by their coupling: inverse CDF with the
// draft_sample uniform (rejection), or the Gumbel race with the target's
// noise at the token's position (gumbel). With prefix caching on in its
// cache, a session's draft KV starts after the longest cached prefix of its
// tokens, and its committed full blocks are published at every commit().
#pragma once

#include <future>
#include <unordered_map>

#include "workers/kv_cache.h"
#include "workers/llama_model.h"
#include "workers/speculation/drafter.h"

namespace tandem {

class ModelDrafter final : public Drafter {
 public:
  // The draft model and its own KV cache (the draft may live on another
  // device than the target; here both are owned by the caller).
  ModelDrafter(LlamaModel& model, PagedKvCache& cache);
  ~ModelDrafter() override;
  std::string name() const override { return "model"; }
  void propose(std::span<const DraftRequest> requests,
               std::vector<DraftProposal>& proposals) override;
  void commit(SessionKey session, int length) override;
  void release(SessionKey session) override;
  double last_seconds() const override { return last_seconds_; }
  PrefixCacheCounters prefix_counters() const override { return cache_.prefix_counters(); }

  // Pipelined drafting on a thread of its own, for a draft whose device is
  // not the target's (a GPU of its own): begin_propose() returns at once.
  // Off by default: on the target's own CPU cores the two would only take
  // turns.
  void run_apart(bool apart) { apart_ = apart; }
  bool overlaps() const override { return apart_; }
  void begin_propose(std::span<const DraftRequest> requests) override;
  void finish_propose(std::vector<DraftProposal>& proposals) override;

 private:
  // A session's draft KV: its sequence and the tokens its positions hold.
  struct DraftSequence {
    SequenceId seq = 0;
    std::vector<int32_t> fed;
    uint64_t salt = 0;
  };
  // The request's sequence, made on first use (after the longest cached
  // prefix of its tokens, when the cache has prefix caching on).
  DraftSequence& sequence_for(const DraftRequest& request);
  // This round's token of each drafting session (into round_tokens_, by
  // row); the q rows of the sampled ones go to q_rounds_ from row
  // q_rows_used_ on, and q_row_of_ notes where.
  void choose_tokens(std::span<const DraftRequest> requests, std::span<const size_t> drafting,
                     std::span<const DraftProposal> proposals, const float* logits, int round);
  // The round's logits with the rows of sessions that ask for logit
  // processing processed (history: their tokens and what they drafted so
  // far), or `logits` itself when none asks.
  const float* process_round(std::span<const DraftRequest> requests,
                             std::span<const size_t> drafting,
                             std::span<const DraftProposal> proposals, const float* logits);
  // Each sampled proposal's rows side by side, in request order, in a
  // buffer of the pool: its q.
  void hand_over_q_rows(std::vector<DraftProposal>& proposals);

  LlamaModel& model_;
  PagedKvCache& cache_;
  std::unordered_map<SessionKey, DraftSequence> sequences_;
  Buffer sampled_logits_;              // (S, V): one round's sampled rows
  Buffer processed_logits_;            // (rows, V): a round's rows, processed where asked
  std::vector<float> processed_host_;
  Buffer q_rounds_;                    // (Σγ, V): every round's q rows, round after round
  size_t q_rows_used_ = 0;
  std::vector<std::vector<int32_t>> q_row_of_;  // per request, its rows in q_rounds_
  RowsPool q_pool_;                    // what the proposals' q rows live in
  std::vector<int32_t> round_tokens_;  // (rows) the round's tokens
  std::vector<SessionFault> faults_;   // per request of the call: its own fault, if any
  double last_seconds_ = 0;
  bool apart_ = false;
  std::vector<DraftRequest> apart_requests_;  // what the thread drafts for
  std::vector<DraftProposal> apart_proposals_;
  std::future<void> apart_work_;
};

}  // namespace tandem
