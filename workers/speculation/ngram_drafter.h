// NgramDrafter: prompt lookup decoding. Finds the longest suffix of the
// committed sequence (between min_ngram and max_ngram tokens) that occurred
// earlier in the same sequence, and proposes the tokens that followed its
// most recent earlier occurrence. It costs almost nothing next to a target
// step (the paper's §3.6 "negligible-cost" draft, c ≈ 0), is deterministic
// (q one-hot), and pays off on inputs that repeat: code edits, summaries
// that quote, templated output.
#pragma once

#include "workers/speculation/drafter.h"

namespace tandem {

class NgramDrafter final : public Drafter {
 public:
  NgramDrafter(int min_ngram = 1, int max_ngram = 4);
  std::string name() const override { return "ngram"; }
  void propose(std::span<const DraftRequest> requests,
               std::vector<DraftProposal>& proposals) override;
  void commit(SessionKey, int) override {}
  void release(SessionKey) override {}
  double last_seconds() const override { return last_seconds_; }

  // The lookup itself, for tests: up to `gamma` tokens continuing `tokens`.
  std::vector<int32_t> lookup(std::span<const int32_t> tokens, int gamma) const;

 private:
  int min_ngram_;
  int max_ngram_;
  double last_seconds_ = 0;
};

}  // namespace tandem
