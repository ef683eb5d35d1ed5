// SpeculativeEngine, step 5 of the step protocol: commit. Each verified
// block's accepted drafts and the target's token are appended (stop rules
// applied), both KV caches truncated to the committed prefix, and the
// step's report and the sessions' statistics written.
#include <algorithm>

#include "workers/speculation/speculative_engine.h"

namespace tandem {

void SpeculativeEngine::commit(StepPlan& plan) {
  const double target_seconds = seconds_since(plan.start);  // forward and accept
  int verified = 0, gamma_sum = 0;
  for (StepPlan::Entry& e : plan.entries) {
    if (e.dropped) continue;
    EngineSession& s = *e.session;
    StepSessionReport report{s.key, drafting_.slots()[s.drafter].name};
    report.fed = static_cast<int>(e.feed.size());
    if (!s.verified_since_admission) report.prefill_tokens = e.chunk.fed;
    s.result.stats.prefill_tokens += report.prefill_tokens;
    if (e.fault != SessionFault::none) {
      fail(s, e.fault);
    } else if (e.first_row >= 0) {
      SpeculationStats& stats = s.result.stats;
      report.gamma = static_cast<int>(e.proposal.tokens.size());
      report.accepted = e.outcome.accepted;
      report.verified = true;
      stats.target_steps += 1;
      stats.draft_tokens += report.gamma;
      stats.accepted_tokens += e.outcome.accepted;
      stats.draft_seconds += plan.draft_seconds[s.drafter];
      stats.target_seconds += target_seconds;
      stats.last_gamma = report.gamma;
      gamma_.verified(s, {e.gamma, e.policy_zero, e.probe}, report.gamma);
      s.verified_since_admission = true;
      ++verified;
      gamma_sum += report.gamma;
      report.emitted = commit_tokens(
          s, std::span(e.proposal.tokens).first(static_cast<size_t>(e.outcome.accepted)),
          e.outcome.token, e.logprobs);
    }
    last_step_.sessions.push_back(std::move(report));
  }
  // Prefix caching: the committed full blocks of the sessions still running.
  for (const StepPlan::Entry& e : plan.entries)
    if (!e.dropped && e.session->state == SessionState::running) planner_.publish(*e.session);
  last_step_.target_seconds = plan.target_seconds;
  last_step_.mean_gamma = verified ? static_cast<double>(gamma_sum) / verified : 0.0;
}

int SpeculativeEngine::commit_tokens(EngineSession& s, std::span<const int32_t> accepted,
                                     int32_t token, std::span<const TokenLogprob> logprobs) {
  // Scoring a prompt only (echo with max_tokens 0): its final chunk was
  // verified to reach here, and what it drew is not output.
  if (s.request.max_new_tokens == 0) {
    planner_.finish(s, FinishReason::length);
    return 0;
  }
  std::vector<int32_t> emitted(accepted.begin(), accepted.end());
  emitted.push_back(token);
  const auto& stops = s.request.stop_ids;
  int appended = 0;
  for (int32_t t : emitted) {
    s.tokens.push_back(t);
    s.result.tokens.push_back(t);
    // In step with the tokens: a block the stop rules cut is cut here too.
    if (!logprobs.empty()) s.result.logprobs.push_back(logprobs[static_cast<size_t>(appended)]);
    ++appended;
    FinishReason reason = FinishReason::running;
    if (std::find(stops.begin(), stops.end(), t) != stops.end()) {
      reason = FinishReason::stop;
    } else if (s.generated() >= s.request.max_new_tokens) {
      reason = FinishReason::length;
    } else if (static_cast<int>(s.tokens.size()) >= config_.max_position_embeddings) {
      reason = FinishReason::context;
    }
    if (reason != FinishReason::running) {
      planner_.finish(s, reason);
      return appended;
    }
  }
  // Keep the target's K/V for committed tokens but the last (fed next step).
  const int committed = static_cast<int>(s.tokens.size());
  kv_.truncate(s.seq, std::min(kv_.cache().length(s.seq), committed - 1));
  s.draft->commit(s.key, committed);
  return appended;
}

}  // namespace tandem
