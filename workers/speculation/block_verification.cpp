#include "workers/speculation/block_verification.h"

#include <algorithm>
#include <span>
#include <string>
#include <utility>

#include "common/error.h"
#include "workers/speculation/logprob_rows.h"

namespace tandem {
namespace {

// Whether `backend`'s ops can read `rows` where they are.
bool readable_in_place(Backend& backend, const DeviceRows& rows) {
  return rows.backend() == &backend ||
         (backend.reads_host_memory() && rows.backend()->reads_host_memory());
}

// Points each block's q at its rows (none: one-hot): in place where the op
// can read them, else copied device to device (a draft GPU of its own in
// this process) into scratch.q.
void place_q_rows(Backend& backend, std::span<const DeviceRows> q_rows,
                  std::span<VerifyBlock> blocks, Buffer& scratch) {
  size_t copied = 0;
  for (const DeviceRows& rows : q_rows)
    if (!rows.empty() && !readable_in_place(backend, rows)) copied += rows.size();
  if (scratch.size() < copied) scratch = backend.allocate(copied);
  size_t at = 0;
  for (size_t k = 0; k < q_rows.size(); ++k) {
    const DeviceRows& rows = q_rows[k];
    if (rows.empty()) continue;
    if (readable_in_place(backend, rows)) {
      blocks[k].q = rows.data();
      continue;
    }
    float* to = scratch.data() + at;
    backend.copy_from(*rows.backend(), rows.data(), rows.size(), to);
    blocks[k].q = to;
    at += rows.size();
  }
}

// Per logits row: 1 where it holds a NaN or an infinity. Only the rows of
// blocks that verify are read (one op over all of them: each host read is
// a device synchronization).
std::vector<uint8_t> nonfinite_rows(Backend& backend, const float* logits, const TargetStep& step,
                                    size_t rows, int V) {
  std::vector<uint8_t> flags(rows, 0);
  const bool any_verify = std::any_of(step.sequences.begin(), step.sequences.end(),
                                      [](const TargetStep::Sequence& s) { return s.verify; });
  if (any_verify && rows > 0)
    backend.find_nonfinite_rows(logits, static_cast<int>(rows), V, flags.data());
  return flags;
}

// A verifying block's own fault: sampling parameters the ops refuse (they
// were checked when the session was added; this is where a value that
// reached a rank anyway is caught), or logits rows that are not finite.
SessionFault block_fault(const TargetStep::Sequence& s, const std::vector<uint8_t>& nonfinite,
                         size_t first_row, const float* processed_rows) {
  if (find_sampling_problem(s.sampling)) return SessionFault::bad_sampling;
  // Lenient verification is Algorithm 1's; the verify op refuses it with
  // the gumbel coupling (SpeculativeEngine::add refuses it first).
  if (!s.sampling.greedy() && s.sampling.coupling == Coupling::gumbel && s.lenience != 1.0f)
    return SessionFault::bad_sampling;
  if (!s.processing.empty() && s.processing.front().active() && processed_rows == nullptr)
    return SessionFault::bad_sampling;  // processing the ops refuse (logit_processing.h)
  for (size_t r = 0; r < static_cast<size_t>(s.logit_count); ++r)
    if (nonfinite[first_row + r]) return SessionFault::nonfinite_target_logits;
  return SessionFault::none;
}

}  // namespace

void verify_blocks(Backend& backend, int V, const float* logits, const TargetStep& step,
                   std::span<const DeviceRows> local_q, QRowsInbox* draft_rank_rows,
                   VerifyScratch& scratch, std::vector<TargetResult::Outcome>& outcomes) {
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
  std::vector<DeviceRows> sampled_q;  // each sampled block's q rows, or none (one-hot)
  std::vector<GreedyBlock> greedy;
  std::vector<size_t> sampled_of, greedy_of;  // index into outcomes
  int sampled_drafts = 0;
  size_t row = 0;
  size_t verified = 0;
  // One argmax over every row serves all greedy blocks: each host read is a
  // device synchronization.
  const bool any_greedy = std::any_of(step.sequences.begin(), step.sequences.end(),
                                      [](const TargetStep::Sequence& s) {
                                        return s.verify && s.sampling.greedy();
                                      });
  if (any_greedy) backend.argmax(logits, static_cast<int>(rows), V, argmaxes.data());
  // Each block's own faults end its session alone (session_fault.h): its
  // rows are left out of the ops below, which the others' never depend on.
  const std::vector<uint8_t> nonfinite = nonfinite_rows(backend, logits, step, rows, V);
  // Per sequence, the rows it verifies from (processed where it asks).
  const std::vector<const float*> from =
      process_step_logits(backend, V, logits, step, scratch.processing, argmaxes);
  std::vector<std::pair<size_t, SessionFault>> faulted;  // index into outcomes, fault
  for (size_t index = 0; index < step.sequences.size(); ++index) {
    const TargetStep::Sequence& s = step.sequences[index];
    const size_t sequence_row = row;
    row += static_cast<size_t>(s.logit_count);
    if (!s.verify) continue;
    require(s.logit_count >= s.gamma + 1, ErrorKind::internal, [&] {
      return "session " + std::to_string(s.session) + " verifies " + std::to_string(s.gamma) +
             " drafts with " + std::to_string(s.logit_count) + " logits rows";
    });
    // p_1..p_{γ+1} are its last rows (rows before them score its prompt).
    const size_t first_row = row - static_cast<size_t>(s.gamma + 1);
    if (const SessionFault fault = block_fault(s, nonfinite, sequence_row, from[index]);
        fault != SessionFault::none) {
      faulted.emplace_back(verified++, fault);
      continue;
    }
    const int32_t* drafts = s.tokens.data() + s.tokens.size() - static_cast<size_t>(s.gamma);
    const size_t offset = first_row * V;
    if (s.sampling.greedy()) {
      greedy.push_back({s.gamma, drafts, argmaxes.data() + first_row});
      greedy_of.push_back(verified++);
      continue;
    }
    // q rows: in this process, rows q_first_row.. of those that came over
    // the q rows link, or none (one-hot at the drafts). The gumbel coupling
    // reads none: a draft is kept iff it is the target's own draw.
    DeviceRows q;
    size_t first = 0;
    const bool gumbel = s.sampling.coupling == Coupling::gumbel;
    if (!gumbel && s.q_source == QSource::local) {
      require(!local_q.empty(), ErrorKind::internal, [&] {
        return "session " + std::to_string(s.session) + "'s q rows are local, but none came";
      });
      q = local_q[index];
    } else if (!gumbel && s.q_source == QSource::draft_rank) {
      require(draft_rank_rows != nullptr, ErrorKind::internal,
              "a block's q rows are at the draft rank, but this rank cannot receive them");
      q = draft_rank_rows->rows(s.session, s.q_step, V);
      first = static_cast<size_t>(s.q_first_row) * V;
    }
    const size_t needed = static_cast<size_t>(s.gamma) * V;
    const bool has_q = s.q_source != QSource::one_hot && !gumbel;
    require(!has_q || first + needed <= q.size(), ErrorKind::internal, [&] {
      return "session " + std::to_string(s.session) + " has " + std::to_string(q.size()) +
             " q values for " + std::to_string(s.gamma) + " drafts from row " +
             std::to_string(s.q_first_row);
    });
    if (has_q) q = q.slice(first, needed);
    backend.standardize(from[index], s.gamma + 1, V, std::span(&s.sampling, 1),
                        probs.data() + offset);
    sampled.push_back({s.gamma, drafts, probs.data() + offset, nullptr, s.first_position,
                       s.sampling.seed, s.lenience, s.sampling.coupling});
    sampled_q.push_back(std::move(q));
    sampled_of.push_back(verified++);
    sampled_drafts += s.gamma;
  }
  place_q_rows(backend, sampled_q, sampled, scratch.q);

  outcomes.assign(verified, {});
  for (const auto& [at, fault] : faulted) outcomes[at].fault = fault;
  std::vector<VerifyOutcome> sampled_out(sampled.size()), greedy_out(greedy.size());
  std::vector<float> betas(static_cast<size_t>(sampled_drafts));
  if (!sampled.empty()) backend.verify(sampled, V, sampled_out, betas);
  if (!greedy.empty()) backend.verify_greedy(greedy, greedy_out);

  // β_j estimates the acceptance rate of the block's coupling: Σ min(p_j, q_j)
  // under rejection, and under gumbel 1 where the draft equals the target's
  // draw at its position (both drawn from the same prefix with the same
  // noise), else 0; the γ controller's α is their mean either way.
  size_t beta_at = 0;
  for (size_t k = 0; k < sampled.size(); ++k) {
    TargetResult::Outcome& out = outcomes[sampled_of[k]];
    out.accepted = sampled_out[k].accepted;
    out.token = sampled_out[k].token;
    for (int j = 0; j < sampled[k].gamma; ++j) out.beta_sum += betas[beta_at++];
    out.beta_count = sampled[k].gamma;
  }
  for (size_t k = 0; k < greedy.size(); ++k) {
    // At temperature 0, β_j = Σ min(p_j, q_j) of one-hot rows: 1 if they agree.
    TargetResult::Outcome& out = outcomes[greedy_of[k]];
    out.accepted = greedy_out[k].accepted;
    out.token = greedy_out[k].token;
    for (int j = 0; j < greedy[k].gamma; ++j)
      out.beta_sum += greedy[k].target_argmax[j] == greedy[k].drafted[j] ? 1.0 : 0.0;
    out.beta_count = greedy[k].gamma;
  }
  score_blocks(backend, V, from, probs.data(), step, outcomes);  // for the sessions that ask
}

}  // namespace tandem
