#include "workers/speculation/block_verification.h"

#include <algorithm>
#include <span>
#include <string>

#include "common/error.h"

namespace tandem {
namespace {

// A sampled block's q rows before they are placed where the verification
// op reads them: on the host (inline in the message), in some backend's
// memory (the drafter's, or the q link's inbox), or none (one-hot).
struct PendingQ {
  std::span<const float> host;
  DeviceRows rows;
};

// Whether `backend`'s ops can read `rows` where they are.
bool readable_in_place(Backend& backend, const DeviceRows& rows) {
  return rows.backend() == &backend ||
         (backend.reads_host_memory() && rows.backend()->reads_host_memory());
}

// Points each block's q at its rows in `backend`'s memory: in place where
// the op can read them, else in scratch.q, with one upload for every host
// block together and one device-to-device copy per block from another GPU.
void place_q_rows(Backend& backend, std::span<const PendingQ> pending,
                  std::span<VerifyBlock> blocks, VerifyScratch& scratch) {
  std::vector<float>& staged = scratch.q_host;
  staged.clear();
  size_t copied = 0;  // floats copied from another backend's memory
  for (const PendingQ& q : pending) {
    if (!q.host.empty() && !backend.reads_host_memory())
      staged.insert(staged.end(), q.host.begin(), q.host.end());
    if (!q.rows.empty() && !readable_in_place(backend, q.rows)) copied += q.rows.size();
  }
  if (scratch.q.size() < staged.size() + copied) scratch.q = backend.allocate(staged.size() + copied);
  if (!staged.empty()) backend.upload(staged, scratch.q.data());
  size_t staged_at = 0;
  size_t copied_at = staged.size();
  for (size_t k = 0; k < pending.size(); ++k) {
    const PendingQ& q = pending[k];
    if (!q.host.empty()) {
      if (backend.reads_host_memory()) {
        blocks[k].q = q.host.data();
      } else {
        blocks[k].q = scratch.q.data() + staged_at;
        staged_at += q.host.size();
      }
    } else if (!q.rows.empty()) {
      if (readable_in_place(backend, q.rows)) {
        blocks[k].q = q.rows.data();
      } else {
        float* to = scratch.q.data() + copied_at;
        backend.copy_from(*q.rows.backend(), q.rows.data(), q.rows.size(), to);
        blocks[k].q = to;
        copied_at += q.rows.size();
      }
    }
  }
}

}  // namespace

void verify_blocks(Backend& backend, int V, const float* logits, const wire::TargetStep& step,
                   std::span<const DeviceRows> local_q, QRowsInbox* draft_rank_rows,
                   VerifyScratch& scratch, std::vector<wire::TargetResult::Outcome>& outcomes) {
  size_t rows = 0;
  for (const auto& s : step.sequences) rows += static_cast<size_t>(s.logit_count);
  Buffer& probs = scratch.probs;
  if (probs.size() < rows * V) probs = backend.allocate(rows * V);
  require(local_q.empty() || local_q.size() == step.sequences.size(), ErrorKind::internal, [&] {
    return "TargetStep " + std::to_string(step.step) + " has " +
           std::to_string(step.sequences.size()) + " sequences but " +
           std::to_string(local_q.size()) + " local q row sets";
  });

  std::vector<int32_t> argmaxes(rows);  // (R)
  std::vector<VerifyBlock> sampled;
  std::vector<PendingQ> sampled_q;  // each sampled block's q rows, or none
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
  for (size_t index = 0; index < step.sequences.size(); ++index) {
    const wire::TargetStep::Sequence& s = step.sequences[index];
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
    // q rows: inline, in this process, rows q_first_row.. of the draft
    // rank's, or none (one-hot at the drafts).
    PendingQ q;
    size_t available = 0;
    size_t first = 0;
    const size_t needed = static_cast<size_t>(s.gamma) * V;
    switch (s.q_source) {
      case wire::QSource::one_hot:
        break;
      case wire::QSource::inline_rows:
        q.host = s.q;
        available = q.host.size();
        break;
      case wire::QSource::local:
        require(!local_q.empty(), ErrorKind::internal, [&] {
          return "session " + std::to_string(s.session) + "'s q rows are local, but none came";
        });
        q.rows = local_q[index];
        available = q.rows.size();
        break;
      case wire::QSource::draft_rank:
        require(draft_rank_rows != nullptr, ErrorKind::internal,
                "a block's q rows are at the draft rank, but this rank cannot receive them");
        q.rows = draft_rank_rows->rows(s.session, s.q_step, V);
        available = q.rows.size();
        first = static_cast<size_t>(s.q_first_row) * V;
        break;
    }
    const bool has_q = s.q_source != wire::QSource::one_hot;
    require(!has_q || first + needed <= available, ErrorKind::internal, [&] {
      return "session " + std::to_string(s.session) + " has " + std::to_string(available) +
             " q values for " + std::to_string(s.gamma) + " drafts from row " +
             std::to_string(s.q_first_row);
    });
    if (!q.host.empty()) q.host = q.host.subspan(first, needed);
    if (!q.rows.empty()) q.rows = q.rows.slice(first, needed);
    backend.standardize(logits + offset, s.gamma + 1, V, std::span(&s.sampling, 1),
                        probs.data() + offset);
    sampled.push_back({s.gamma, drafts, probs.data() + offset, nullptr, s.first_position,
                       s.sampling.seed, s.lenience});
    sampled_q.push_back(std::move(q));
    sampled_of.push_back(verified++);
    sampled_drafts += s.gamma;
  }
  place_q_rows(backend, sampled_q, sampled, scratch);

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
