#include "workers/speculation/block_verification.h"

#include <optional>
#include <span>
#include <string>
#include <unordered_map>

#include "common/error.h"

namespace tandem {
namespace {

// This step's rows from the draft rank by session, fetched on first use.
class DraftRankRows {
 public:
  DraftRankRows(const QRowsSource& fetch, int V) : fetch_(fetch), V_(V) {}

  const std::vector<float>& of(uint64_t session) {
    if (!rows_) fetch();
    auto it = by_session_.find(session);
    require(it != by_session_.end(), ErrorKind::internal, [&] {
      return "no q rows from the draft rank for session " + std::to_string(session);
    });
    return *it->second;
  }

 private:
  void fetch() {
    require(static_cast<bool>(fetch_), ErrorKind::internal,
            "a block's q rows are at the draft rank, but this rank cannot receive them");
    rows_ = fetch_();
    require(rows_->vocab == V_, ErrorKind::internal, [&] {
      return "QRows for vocabulary " + std::to_string(rows_->vocab) + ", target has " +
             std::to_string(V_);
    });
    for (const wire::QRows::Entry& entry : rows_->entries) by_session_[entry.session] = &entry.q;
  }

  const QRowsSource& fetch_;
  int V_;
  std::optional<wire::QRows> rows_;
  std::unordered_map<uint64_t, const std::vector<float>*> by_session_;
};

}  // namespace

void verify_blocks(Backend& backend, int V, const float* logits, const wire::TargetStep& step,
                   const QRowsSource& fetch_q_rows, VerifyScratch& scratch,
                   std::vector<wire::TargetResult::Outcome>& outcomes) {
  size_t rows = 0;
  for (const auto& s : step.sequences) rows += static_cast<size_t>(s.logit_count);
  Buffer& probs = scratch.probs;
  if (probs.size() < rows * V) probs = backend.allocate(rows * V);
  DraftRankRows draft_rank_rows(fetch_q_rows, V);

  std::vector<int32_t> argmaxes(rows);  // (R)
  std::vector<VerifyBlock> sampled;
  std::vector<const std::vector<float>*> sampled_q;  // host q rows of each sampled block, or null
  std::vector<GreedyBlock> greedy;
  std::vector<size_t> sampled_of, greedy_of;  // index into outcomes
  int sampled_drafts = 0;
  size_t row = 0;
  size_t verified = 0;
  for (const wire::TargetStep::Sequence& s : step.sequences) {
    const size_t first_row = row;
    row += static_cast<size_t>(s.logit_count);
    if (!s.verify) continue;
    require(s.logit_count == s.gamma + 1, ErrorKind::internal, [&] {
      return "session " + std::to_string(s.session) + " verifies " + std::to_string(s.gamma) +
             " drafts with " + std::to_string(s.logit_count) + " logits rows";
    });
    const int32_t* drafts = s.tokens.data() + s.tokens.size() - static_cast<size_t>(s.gamma);
    const size_t offset = first_row * V;
    if (s.sampling.greedy()) {
      backend.argmax(logits + offset, s.gamma + 1, V, argmaxes.data() + first_row);
      greedy.push_back({s.gamma, drafts, argmaxes.data() + first_row});
      greedy_of.push_back(verified++);
      continue;
    }
    // q rows: inline, from the draft rank, or none (one-hot at the drafts).
    const std::vector<float>* q_rows = s.q_source == wire::QSource::inline_rows ? &s.q
                                       : s.q_source == wire::QSource::draft_rank
                                           ? &draft_rank_rows.of(s.session)
                                           : nullptr;
    require(!q_rows || q_rows->size() == static_cast<size_t>(s.gamma) * V, ErrorKind::internal,
            [&] {
              return "session " + std::to_string(s.session) + " has " +
                     std::to_string(q_rows->size()) + " q values for " +
                     std::to_string(s.gamma) + " drafts";
            });
    backend.standardize(logits + offset, s.gamma + 1, V, std::span(&s.sampling, 1),
                        probs.data() + offset);
    sampled.push_back({s.gamma, drafts, probs.data() + offset, nullptr, s.first_position,
                       s.sampling.seed, s.lenience});
    sampled_q.push_back(q_rows);
    sampled_of.push_back(verified++);
    sampled_drafts += s.gamma;
  }

  // The q rows go to backend memory, block after block.
  size_t q_values = 0;
  for (const std::vector<float>* q : sampled_q) q_values += q ? q->size() : 0;
  if (scratch.q.size() < q_values) scratch.q = backend.allocate(q_values);
  size_t q_at = 0;
  for (size_t k = 0; k < sampled.size(); ++k) {
    if (!sampled_q[k]) continue;
    backend.upload(*sampled_q[k], scratch.q.data() + q_at);
    sampled[k].q = scratch.q.data() + q_at;
    q_at += sampled_q[k]->size();
  }

  outcomes.assign(verified, {});
  std::vector<VerifyOutcome> sampled_out(sampled.size()), greedy_out(greedy.size());
  std::vector<float> betas(static_cast<size_t>(sampled_drafts));
  if (!sampled.empty()) backend.verify(sampled, V, sampled_out, betas);
  if (!greedy.empty()) backend.verify_greedy(greedy, greedy_out);

  size_t beta_at = 0;
  for (size_t k = 0; k < sampled.size(); ++k) {
    wire::TargetResult::Outcome& out = outcomes[sampled_of[k]];
    out.accepted = sampled_out[k].accepted;
    out.token = sampled_out[k].token;
    for (int j = 0; j < sampled[k].gamma; ++j) out.beta_sum += betas[beta_at++];
    out.beta_count = sampled[k].gamma;
  }
  for (size_t k = 0; k < greedy.size(); ++k) {
    // At temperature 0, β_j = Σ min(p_j, q_j) of one-hot rows: 1 if they agree.
    wire::TargetResult::Outcome& out = outcomes[greedy_of[k]];
    out.accepted = greedy_out[k].accepted;
    out.token = greedy_out[k].token;
    for (int j = 0; j < greedy[k].gamma; ++j)
      out.beta_sum += greedy[k].target_argmax[j] == greedy[k].drafted[j] ? 1.0 : 0.0;
    out.beta_count = greedy[k].gamma;
  }
}

}  // namespace tandem
