// SpeculativeEngine's pipelined drafting (pipeline_policy.h): which shape a
// step takes, and the drafting that runs while the target verifies.
//
// A step of shape ahead or pingpong calls begin_propose() on the drafters
// just before the target pass and finish_propose() just after it, so a
// drafter that overlaps (a draft rank, a draft GPU) drafts meanwhile:
//   ahead     for a verifying session, the block after the one under
//             verification: its request is the committed text plus this
//             block's drafts, and asks one token more, the draft's guess at
//             the target's token. Kept as the session's ready block only if
//             verification accepts the whole block and the target's token
//             equals the guess; the ready block is then exactly what a plain
//             step would draft next (same prefix, same Philox positions).
//   pingpong  the sessions of the apart group, which sit this target pass
//             out, draft their next block from their committed text; the
//             next step verifies them while the others draft.
#include <algorithm>
#include <cmath>

#include "workers/speculation/speculative_engine.h"
#include "workers/speculation/speculative_session.h"
#include "workers/speculation/speculative_step_plan.h"

namespace tandem {
namespace {

// The session's acceptance rate so far, pulled towards its policy's prior
// while it has few measurements (as the γ policy does).
double estimated_alpha(const SpeculationStats& stats, const GammaPolicy& policy) {
  return (stats.beta_sum + policy.prior_alpha * policy.prior_weight) /
         (stats.beta_count + policy.prior_weight);
}

// The chance a block of γ drafts is accepted whole and the guess at the
// target's token is right: α^(γ+1) with independent positions.
double hit_rate(double alpha, int gamma) { return std::pow(alpha, gamma + 1); }

}  // namespace

SpeculativeEngine::ShapeChoice SpeculativeEngine::choose_step_shape() {
  // Pipelining is for the default drafter (the draft model); sessions on
  // others (n-gram lookup costs next to nothing) step as before.
  DrafterSlot& slot = drafters_.front();
  int decoding = 0;
  double gamma_sum = 0, hit_sum = 0;
  for (const Session* s : running_) {
    if (!s->verified_since_admission || s->drafter != 0 || !s->request.pipeline) continue;
    const int gamma = std::max(1, s->result.stats.last_gamma > 0 ? s->result.stats.last_gamma
                                                                 : s->request.gamma.gamma);
    ++decoding;
    gamma_sum += gamma;
    hit_sum += hit_rate(estimated_alpha(s->result.stats, s->request.gamma), gamma);
  }
  if (decoding == 0) return {};
  const double gamma = gamma_sum / decoding;
  // D(n): γ draft passes over n sessions; T(n): one target pass of n blocks.
  const auto draft = [&](int n) { return gamma * slot.pass_cost.seconds(n); };
  const auto target = [&](int n) {
    return cost_model_.seconds(static_cast<int>(std::lround(n * (gamma + 1))));
  };
  ShapeChoice choice;
  choice.apart = pingpong_split(decoding, draft, target);
  PipelineCosts costs;
  costs.draft_all = draft(decoding);
  costs.target_all = target(decoding);
  if (const int a = choice.apart, b = decoding - a; a > 0) {
    costs.draft_group_a = draft(a);
    costs.draft_group_b = draft(b);
    costs.target_group_a = target(a);
    costs.target_group_b = target(b);
  }
  costs.hit_rate = hit_sum / decoding;
  costs.ahead_factor = (gamma + 1) / gamma;
  costs.ahead_draft = slot.ahead_cost.seconds(decoding);
  choice.shape = choose_shape(pipeline_, costs, slot.drafter->overlaps(), decoding);
  // A is learned only by drafting ahead: now and then, try it.
  if (choice.shape == StepShape::plain && pipeline_.mode == PipelineMode::automatic &&
      slot.drafter->overlaps() && costs.draft_all > 0 && costs.hit_rate >= pipeline_.min_hit_rate &&
      ++slot.plain_steps_since_ahead >= kAheadProbeEvery)
    choice.shape = StepShape::ahead;
  if (choice.shape != StepShape::plain) slot.plain_steps_since_ahead = 0;
  return choice;
}

void SpeculativeEngine::begin_pipelined_drafts(StepPlan& plan) {
  plan.pipelined.assign(drafters_.size(), StepPlan::Pipelined{});
  if (plan.shape == StepShape::plain) return;
  for (size_t i = 0; i < plan.apart.size(); ++i) {
    Session& s = *plan.apart[i];
    if (s.state != SessionState::running) continue;  // preempted while reserving
    StepPlan::Pipelined& work = plan.pipelined[s.drafter];
    work.requests.push_back({s.key, s.tokens, plan.apart_gamma[i], s.request.sampling});
    work.ahead_of.push_back(nullptr);
    work.sessions.push_back(&s);
  }
  last_step_.apart_sessions = static_cast<int>(plan.apart.size());
  if (plan.shape == StepShape::ahead) {
    for (StepPlan::Entry& e : plan.entries) {
      Session& s = *e.session;
      if (e.dropped || !e.chunk.verifies || e.proposal.tokens.empty() || !s.request.pipeline)
        continue;
      if (!drafters_[s.drafter].drafter->overlaps()) continue;
      const int gamma = static_cast<int>(e.proposal.tokens.size());
      if (hit_rate(estimated_alpha(s.result.stats, s.request.gamma), gamma) <
          pipeline_.min_hit_rate)
        continue;
      // The next block, capped as choose_gamma caps it once this block and
      // the target's token are committed.
      const int length_after = static_cast<int>(s.tokens.size()) + gamma + 1;
      const int next = std::min({gamma, s.request.max_new_tokens - (s.generated() + gamma + 1) - 1,
                                 config_.max_position_embeddings - length_after});
      if (next <= 0) continue;
      e.ahead_tokens = s.tokens;
      e.ahead_tokens.insert(e.ahead_tokens.end(), e.proposal.tokens.begin(),
                            e.proposal.tokens.end());
      e.drafting_ahead = true;
      StepPlan::Pipelined& work = plan.pipelined[s.drafter];
      work.requests.push_back({s.key, e.ahead_tokens, 1 + next, s.request.sampling});
      work.ahead_of.push_back(&e);
      work.sessions.push_back(&s);
    }
  }
  for (size_t d = 0; d < drafters_.size(); ++d)
    if (!plan.pipelined[d].requests.empty()) drafters_[d].drafter->begin_propose(plan.pipelined[d].requests);
}

void SpeculativeEngine::finish_pipelined_drafts(StepPlan& plan) {
  for (size_t d = 0; d < plan.pipelined.size(); ++d) {
    StepPlan::Pipelined& work = plan.pipelined[d];
    if (work.requests.empty() || !work.proposals.empty()) continue;
    DrafterSlot& slot = drafters_[d];
    const auto start = Clock::now();
    slot.drafter->finish_propose(work.proposals);
    work.wait_seconds = seconds_since(start);
    last_step_.draft_wait_seconds += work.wait_seconds;
    const double seconds = slot.drafter->last_seconds();
    last_step_.draft_busy_seconds += seconds;
    const int sessions = static_cast<int>(work.requests.size());
    if (std::find(work.ahead_of.begin(), work.ahead_of.end(), nullptr) == work.ahead_of.end()) {
      slot.ahead_cost.record(sessions, seconds);  // all ahead: the A of choose_shape
      continue;
    }
    // Apart (ping-pong): one draft pass per token of the longest proposal,
    // as in a plain step.
    size_t passes = 0;
    for (const DraftProposal& p : work.proposals) passes = std::max(passes, p.tokens.size());
    if (passes > 0) slot.pass_cost.record(sessions, seconds / passes);
  }
}

void SpeculativeEngine::keep_ready_blocks(StepPlan& plan) {
  const size_t V = static_cast<size_t>(config_.vocab_size);
  for (StepPlan::Pipelined& work : plan.pipelined) {
    for (size_t i = 0; i < work.proposals.size(); ++i) {
      Session& s = *work.sessions[i];
      DraftProposal& got = work.proposals[i];
      const StepPlan::Entry* e = work.ahead_of[i];
      if (e) {
        ++last_step_.ahead_drafts;
        ++s.result.stats.ahead_drafts;
      }
      if (s.state != SessionState::running || got.tokens.empty()) {
        if (e) ++last_step_.ahead_misses;
        continue;
      }
      if (!e) {  // ping-pong: drafted from the committed text, which has not moved
        s.ready = Session::ReadyBlock{s.tokens.size(), std::move(got)};
        continue;
      }
      // Ahead: the whole block kept and the target's token is the guess.
      const bool hit = e->first_row >= 0 &&
                       e->outcome.accepted == static_cast<int>(e->proposal.tokens.size()) &&
                       got.tokens.size() >= 2 && e->outcome.token == got.tokens.front();
      if (!hit) {
        ++last_step_.ahead_misses;
        continue;
      }
      ++last_step_.ahead_hits;
      ++s.result.stats.ahead_hits;
      DraftProposal next;  // the block after the guess, and its q rows
      next.tokens.assign(got.tokens.begin() + 1, got.tokens.end());
      if (!got.q.empty()) next.q = got.q.slice(V, got.q.size() - V);
      next.q_at_draft_rank = got.q_at_draft_rank;
      next.q_step = got.q_step;
      next.q_first_row = got.q_first_row + 1;
      s.ready = Session::ReadyBlock{s.tokens.size(), std::move(next)};
    }
  }
}

}  // namespace tandem
