#include "workers/speculation/block_verification.h"

#include <span>
#include <string>
#include <unordered_map>

#include "common/error.h"

namespace tandem {
namespace {

// The q rows of each session in this step's QRows, by session key.
std::unordered_map<uint64_t, const std::vector<float>*> index_q_rows(const wire::QRows* q_rows,
                                                                     int V) {
  std::unordered_map<uint64_t, const std::vector<float>*> rows;
  if (q_rows == nullptr) return rows;
  require(q_rows->vocab == V, ErrorKind::internal, [&] {
    return "QRows for vocabulary " + std::to_string(q_rows->vocab) + ", target has " +
           std::to_string(V);
  });
  for (const wire::QRows::Entry& entry : q_rows->entries) rows[entry.session] = &entry.q;
  return rows;
}

}  // namespace

void verify_blocks(Backend& backend, int V, const float* logits, const wire::TargetStep& step,
                   const wire::QRows* q_rows, Buffer& probs,
                   std::vector<wire::TargetResult::Outcome>& outcomes) {
  size_t rows = 0;
  for (const auto& s : step.sequences) rows += static_cast<size_t>(s.logit_count);
  if (probs.size() < rows * V) probs = backend.allocate(rows * V);
  const auto remote_q = index_q_rows(q_rows, V);

  std::vector<int32_t> argmaxes(rows);  // (R)
  std::vector<VerifyBlock> sampled;
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
    const float* q = nullptr;
    if (s.q_source == wire::QSource::inline_rows) {
      q = s.q.data();
    } else if (s.q_source == wire::QSource::draft_rank) {
      auto it = remote_q.find(s.session);
      require(it != remote_q.end(), ErrorKind::internal, [&] {
        return "no q rows from the draft rank for session " + std::to_string(s.session);
      });
      q = it->second->data();
    }
    const size_t q_size = q == nullptr ? 0
                          : s.q_source == wire::QSource::inline_rows
                              ? s.q.size()
                              : remote_q.at(s.session)->size();
    require(q == nullptr || q_size == static_cast<size_t>(s.gamma) * V, ErrorKind::internal, [&] {
      return "session " + std::to_string(s.session) + " has " + std::to_string(q_size) +
             " q values for " + std::to_string(s.gamma) + " drafts";
    });
    backend.standardize(logits + offset, s.gamma + 1, V, std::span(&s.sampling, 1),
                        probs.data() + offset);
    sampled.push_back({s.gamma, drafts, probs.data() + offset, q, s.first_position,
                       s.sampling.seed, s.lenience});
    sampled_of.push_back(verified++);
    sampled_drafts += s.gamma;
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
