#include "workers/speculation/target_pass.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "common/error.h"
#include "workers/speculation/speculative_session.h"

namespace tandem {
namespace {

// Where the q rows of an entry's drafts are for the verifier.
QSource q_source_of(const DraftProposal& proposal) {
  if (proposal.q_at_draft_rank) return QSource::draft_rank;
  return proposal.q.empty() ? QSource::one_hot : QSource::local;
}

// For a session that asked for prompt logprobs: the prompt tokens this
// feed's rows score (position i's row scores token i + 1), from the first
// position it has no score for yet, so that a re-prefill after preemption
// scores nothing twice; logit_count grows to cover those rows.
void ask_prompt_scores(const EngineSession& s, int start, int fed,
                       TargetStep::Sequence& sequence) {
  if (!s.request.prompt_logprobs) return;
  const int scored = static_cast<int>(s.result.prompt_logprobs.size());  // tokens 1..scored
  const int from = std::max(start, scored);
  const int to = std::min(start + fed, s.prompt_length - 1);  // positions [from, to)
  if (from >= to) return;
  require(scored >= start, ErrorKind::internal, [&] {
    return "session " + std::to_string(s.key) + " has " + std::to_string(scored) +
           " prompt scores but feeds from position " + std::to_string(start);
  });
  sequence.scored.assign(s.tokens.begin() + from + 1, s.tokens.begin() + to + 1);
  sequence.logit_count = std::max(sequence.logit_count,
                                  static_cast<int32_t>(sequence.tokens.size()) - (from - start));
}

// The prompt scores the pass returned for entry e into its session, as
// many as it asked; a score that is not finite (non-finite logits) is the
// session's own fault.
SessionFault take_prompt_scores(const TargetResult& result, size_t sequence, StepPlan::Entry& e) {
  if (e.prompt_scores == 0) return SessionFault::none;
  const size_t came = sequence < result.prompt_logprobs.size()
                          ? result.prompt_logprobs[sequence].size() : 0;
  require(came == static_cast<size_t>(e.prompt_scores), ErrorKind::internal, [&] {
    return "the target pass scored " + std::to_string(came) + " prompt tokens of session " +
           std::to_string(e.session->key) + ", which asked for " +
           std::to_string(e.prompt_scores);
  });
  std::vector<TokenLogprob>& into = e.session->result.prompt_logprobs;
  for (const TokenLogprob& scored : result.prompt_logprobs[sequence]) {
    if (!std::isfinite(scored.logprob)) return SessionFault::nonfinite_target_logits;
    into.push_back(scored);
  }
  return SessionFault::none;
}

}  // namespace

void TargetPass::run(TargetStep& step, std::span<const DeviceRows> local_q,
                     TargetResult& result) {
  kv_.stamp(step);  // the sequences released and truncated since the last pass go with it
  target_.run(step, local_q, result);
}

bool TargetPass::verify(StepPlan& plan, StepReport& report) {
  TargetStep step;
  std::vector<DeviceRows> local_q;  // per sequence: the drafter's rows, where it left them
  bool fed = false;
  for (StepPlan::Entry& e : plan.entries) {
    if (e.dropped) continue;
    EngineSession& s = *e.session;
    e.start = kv_.cache().length(s.seq);
    const auto from = s.tokens.begin() + e.start;
    e.feed.assign(from, from + e.chunk.fed);
    e.feed.insert(e.feed.end(), e.proposal.tokens.begin(), e.proposal.tokens.end());
    TargetStep::Sequence sequence;
    sequence.seq = s.seq;
    sequence.start = e.start;
    sequence.tokens = e.feed;
    sequence.verify = e.chunk.verifies;
    if (e.chunk.verifies) {
      sequence.gamma = static_cast<int32_t>(e.proposal.tokens.size());
      sequence.logit_count = sequence.gamma + 1;
      sequence.sampling = s.request.sampling;
      sequence.first_position = static_cast<int64_t>(s.tokens.size());
      sequence.lenience = s.request.lenience;
      sequence.session = s.key;
      sequence.q_source = q_source_of(e.proposal);
      sequence.q_step = e.proposal.q_step;
      sequence.q_first_row = e.proposal.q_first_row;
      if (s.request.processing.active()) {  // only those who ask carry it
        sequence.processing = {s.request.processing};
        sequence.history = s.tokens;
      }
      e.first_row = plan.rows;
    }
    sequence.logprobs = s.request.logprobs;
    ask_prompt_scores(s, e.start, e.chunk.fed, sequence);
    e.prompt_scores = static_cast<int>(sequence.scored.size());
    plan.rows += sequence.logit_count;
    step.sequences.push_back(std::move(sequence));
    local_q.push_back(std::move(e.proposal.q));
    fed = true;
    report.target_tokens += static_cast<int>(e.feed.size());
  }
  if (!fed) return false;
  plan.start = Clock::now();
  run(step, local_q, plan.result);
  plan.target_seconds = seconds_since(plan.start);
  report.forward_seconds = plan.result.forward_seconds;
  report.communication_seconds = plan.result.communication_seconds;
  report.verify_seconds = plan.result.verify_seconds;
  return true;
}

void TargetPass::accept(StepPlan& plan) {
  size_t outcome = 0, sequence = 0;
  for (StepPlan::Entry& e : plan.entries) {
    if (e.dropped) continue;
    EngineSession& s = *e.session;
    // The engine's account of the cache (an in-process forward over this
    // same cache has already recorded it; a remote one has not).
    kv_.cache().set_length(s.seq, e.start + static_cast<int>(e.feed.size()));
    e.fault = take_prompt_scores(plan.result, sequence++, e);
    if (e.first_row < 0) continue;
    require(outcome < plan.result.outcomes.size(), ErrorKind::internal,
            "the target pass returned fewer outcomes than blocks it verified");
    const TargetResult::Outcome& out = plan.result.outcomes[outcome++];
    e.outcome = {out.accepted, out.token};
    if (out.fault != SessionFault::none) e.fault = out.fault;
    e.logprobs = out.logprobs;
    // What the verifier returned for this block alone: out of range, it is
    // this session's fault, not the step's.
    const bool in_range = out.token >= 0 && out.token < vocab_ && out.accepted >= 0 &&
                          out.accepted <= static_cast<int>(e.proposal.tokens.size());
    if (e.fault == SessionFault::none && !in_range) e.fault = SessionFault::invalid_token;
    if (e.fault != SessionFault::none) continue;
    const size_t scores = s.request.logprobs >= 0 ? static_cast<size_t>(out.accepted) + 1 : 0;
    require(e.logprobs.size() == scores, ErrorKind::internal, [&] {
      return "the target pass scored " + std::to_string(e.logprobs.size()) + " tokens of session " +
             std::to_string(s.key) + "'s block, which emits " + std::to_string(out.accepted + 1);
    });
    s.result.stats.beta_sum += out.beta_sum;
    s.result.stats.beta_count += out.beta_count;
  }
}

double TargetPass::timed_pass(int tokens) {
  PagedKvCache& cache = kv_.cache();
  const int sequences = (tokens + context_ - 1) / context_;
  TargetStep step;
  bool fits = true;
  for (int i = 0; i < sequences; ++i) {
    const int count = tokens / sequences + (i < tokens % sequences ? 1 : 0);
    TargetStep::Sequence sequence;
    sequence.seq = cache.create_sequence();
    fits = fits && cache.reserve(sequence.seq, count);
    sequence.tokens.resize(static_cast<size_t>(count));
    for (int j = 0; j < count; ++j)
      sequence.tokens[static_cast<size_t>(j)] = (7 + 31 * (i + j)) % vocab_;
    sequence.logit_count = count;
    step.sequences.push_back(std::move(sequence));
  }
  double seconds = -1;
  if (fits) {
    TargetResult result;
    const auto start = Clock::now();
    run(step, {}, result);
    seconds = seconds_since(start);
  }
  for (const auto& sequence : step.sequences) kv_.release(sequence.seq);
  return seconds;
}

}  // namespace tandem
