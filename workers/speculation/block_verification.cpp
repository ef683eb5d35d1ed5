#include "workers/speculation/block_verification.h"

#include <algorithm>
#include <span>
#include <string>

#include "common/error.h"

namespace tandem {
void verify_blocks(Backend& backend, int V, const float* logits, const wire::TargetStep& step,
                   QRowsInbox* draft_rank_rows, VerifyScratch& scratch,
                   std::vector<wire::TargetResult::Outcome>& outcomes) {
  size_t rows = 0;
  for (const auto& s : step.sequences) rows += static_cast<size_t>(s.logit_count);
  Buffer& probs = scratch.probs;
  if (probs.size() < rows * V) probs = backend.allocate(rows * V);

  std::vector<int32_t> argmaxes(rows);  // (R)
  std::vector<VerifyBlock> sampled;
  std::vector<std::span<const float>> sampled_q;  // host q rows of each sampled block, or none
  std::vector<GreedyBlock> greedy;
  std::vector<size_t> sampled_of, greedy_of;  // index into outcomes
  int sampled_drafts = 0;
  size_t row = 0;
  size_t verified = 0;
  // One argmax over every row serves all greedy blocks: each host read is a
  // device synchronization.
  const bool any_greedy = std::any_of(step.sequences.begin(), step.sequences.end(),
                                      [](const wire::TargetStep::Sequence& s) {
                                        return s.verify && s.sampling.greedy();
                                      });
  if (any_greedy) backend.argmax(logits, static_cast<int>(rows), V, argmaxes.data());
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
      greedy.push_back({s.gamma, drafts, argmaxes.data() + first_row});
      greedy_of.push_back(verified++);
      continue;
    }
    // q rows: inline, rows q_first_row.. of the draft rank's, or none
    // (one-hot at the drafts).
    std::span<const float> q_rows;
    size_t first = 0;
    if (s.q_source == wire::QSource::inline_rows) q_rows = s.q;
    if (s.q_source == wire::QSource::draft_rank) {
      require(draft_rank_rows != nullptr, ErrorKind::internal,
              "a block's q rows are at the draft rank, but this rank cannot receive them");
      q_rows = draft_rank_rows->rows(s.session, s.q_step, V);
      first = static_cast<size_t>(s.q_first_row) * V;
    }
    const size_t needed = static_cast<size_t>(s.gamma) * V;
    const bool has_q = s.q_source != wire::QSource::one_hot;
    require(!has_q || first + needed <= q_rows.size(), ErrorKind::internal, [&] {
      return "session " + std::to_string(s.session) + " has " + std::to_string(q_rows.size()) +
             " q values for " + std::to_string(s.gamma) + " drafts from row " +
             std::to_string(s.q_first_row);
    });
    if (has_q) q_rows = q_rows.subspan(first, needed);
    backend.standardize(logits + offset, s.gamma + 1, V, std::span(&s.sampling, 1),
                        probs.data() + offset);
    sampled.push_back({s.gamma, drafts, probs.data() + offset, nullptr, s.first_position,
                       s.sampling.seed, s.lenience});
    sampled_q.push_back(has_q ? q_rows : std::span<const float>());
    sampled_of.push_back(verified++);
    sampled_drafts += s.gamma;
  }

  // The q rows where the verification op reads them: in place when the
  // backend's ops read host memory, else side by side in one upload.
  if (backend.reads_host_memory()) {
    for (size_t k = 0; k < sampled.size(); ++k)
      if (!sampled_q[k].empty()) sampled[k].q = sampled_q[k].data();
  } else {
    std::vector<float>& staged = scratch.q_host;
    staged.clear();
    for (std::span<const float> q : sampled_q) staged.insert(staged.end(), q.begin(), q.end());
    if (scratch.q.size() < staged.size()) scratch.q = backend.allocate(staged.size());
    if (!staged.empty()) backend.upload(staged, scratch.q.data());
    size_t q_at = 0;
    for (size_t k = 0; k < sampled.size(); ++k) {
      if (sampled_q[k].empty()) continue;
      sampled[k].q = scratch.q.data() + q_at;
      q_at += sampled_q[k].size();
    }
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
