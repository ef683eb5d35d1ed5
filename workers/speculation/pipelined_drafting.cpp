#include "workers/speculation/pipelined_drafting.h"

#include <algorithm>
#include <cmath>

#include "workers/speculation/speculative_session.h"

namespace tandem {

double PipelinedDrafting::hit_rate(const EngineSession& s, int gamma) const {
  return std::pow(gamma_.alpha(s.result.stats), gamma + 1);
}

PipelinedDrafting::ShapeChoice PipelinedDrafting::choose_shape(
    const std::vector<EngineSession*>& running) {
  DrafterSlot& slot = drafting_.slots().front();
  int decoding = 0;
  double gamma_sum = 0, hit_sum = 0;
  for (const EngineSession* s : running) {
    if (!s->verified_since_admission || s->drafter != 0 || !s->request.pipeline) continue;
    const int gamma = std::max(1, s->result.stats.last_gamma > 0 ? s->result.stats.last_gamma
                                                                 : s->request.gamma.gamma);
    ++decoding;
    gamma_sum += gamma;
    hit_sum += hit_rate(*s, gamma);
  }
  if (decoding == 0) return {};
  const double gamma = gamma_sum / decoding;
  // D(n): γ draft passes over n sessions; T(n): one target pass of n blocks.
  const auto draft = [&](int n) { return gamma * slot.pass_cost.seconds(n); };
  const auto target = [&](int n) {
    return gamma_.cost_model().seconds(static_cast<int>(std::lround(n * (gamma + 1))));
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
  choice.shape = tandem::choose_shape(policy_, costs, slot.drafter->overlaps(), decoding);
  // A is learned only by drafting ahead: now and then, try it.
  if (choice.shape == StepShape::plain && policy_.mode == PipelineMode::automatic &&
      slot.drafter->overlaps() && costs.draft_all > 0 && costs.hit_rate >= policy_.min_hit_rate &&
      ++plain_steps_since_ahead_ >= gamma_.tuning().ahead_probe_every)
    choice.shape = StepShape::ahead;
  if (choice.shape != StepShape::plain) plain_steps_since_ahead_ = 0;
  return choice;
}

void PipelinedDrafting::plan(const std::vector<EngineSession*>& running, StepPlan& plan) {
  const ShapeChoice shape = choose_shape(running);
  plan.shape = shape.shape;
  // A ready block stands while the committed text has not moved.
  for (EngineSession* s : running)
    if (s->ready && s->ready->length != s->tokens.size()) s->ready.reset();
  if (plan.shape != StepShape::pingpong) return;
  std::vector<EngineSession*> candidates;  // decoding, nothing ready, a drafter that overlaps
  std::vector<int> gammas;
  for (EngineSession* s : running) {
    if (!s->verified_since_admission || s->ready || !s->request.pipeline ||
        !drafting_.slots()[s->drafter].drafter->overlaps())
      continue;
    const GammaChoice choice = gamma_.choose(*s);
    if (choice.gamma == 0 || choice.probe) continue;
    candidates.push_back(s);
    gammas.push_back(choice.gamma);
  }
  // The youngest draft apart (the groups then alternate by themselves:
  // next step these verify while the others draft), so the oldest
  // sessions are not held back.
  const size_t apart = std::min(candidates.size(), static_cast<size_t>(shape.apart));
  plan.apart.assign(candidates.end() - static_cast<std::ptrdiff_t>(apart), candidates.end());
  plan.apart_gamma.assign(gammas.end() - static_cast<std::ptrdiff_t>(apart), gammas.end());
}

void PipelinedDrafting::begin(StepPlan& plan, StepReport& report) {
  std::vector<DrafterSlot>& slots = drafting_.slots();
  work_.assign(slots.size(), Work{});
  if (plan.shape == StepShape::plain) return;
  for (size_t i = 0; i < plan.apart.size(); ++i) {
    EngineSession& s = *plan.apart[i];
    if (s.state != SessionState::running) continue;  // preempted while reserving
    Work& work = work_[s.drafter];
    work.requests.push_back({s.key, s.tokens, plan.apart_gamma[i], s.request.sampling, s.processing(),
                          s.request.cache_salt});
    work.ahead_of.push_back(nullptr);
    work.sessions.push_back(&s);
  }
  report.apart_sessions = static_cast<int>(plan.apart.size());
  if (plan.shape == StepShape::ahead) {
    for (StepPlan::Entry& e : plan.entries) {
      EngineSession& s = *e.session;
      if (e.dropped || !e.chunk.verifies || e.proposal.tokens.empty() || !s.request.pipeline)
        continue;
      if (!slots[s.drafter].drafter->overlaps()) continue;
      const int gamma = static_cast<int>(e.proposal.tokens.size());
      if (hit_rate(s, gamma) < policy_.min_hit_rate) continue;
      // The next block, capped as it will be once this block and the
      // target's token are committed.
      const int next = gamma_.cap(s, gamma, gamma + 1);
      if (next <= 0) continue;
      e.ahead_tokens = s.tokens;
      e.ahead_tokens.insert(e.ahead_tokens.end(), e.proposal.tokens.begin(),
                            e.proposal.tokens.end());
      Work& work = work_[s.drafter];
      work.requests.push_back({s.key, e.ahead_tokens, 1 + next, s.request.sampling, s.processing(),
                          s.request.cache_salt});
      work.ahead_of.push_back(&e);
      work.sessions.push_back(&s);
    }
  }
  for (size_t d = 0; d < slots.size(); ++d)
    if (!work_[d].requests.empty()) slots[d].drafter->begin_propose(work_[d].requests);
}

void PipelinedDrafting::finish(StepReport& report) {
  for (size_t d = 0; d < work_.size(); ++d) {
    Work& work = work_[d];
    if (work.requests.empty() || !work.proposals.empty()) continue;
    DrafterSlot& slot = drafting_.slots()[d];
    const auto start = Clock::now();
    slot.drafter->finish_propose(work.proposals);
    report.draft_wait_seconds += seconds_since(start);
    const double seconds = slot.drafter->last_seconds();
    report.draft_busy_seconds += seconds;
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

void PipelinedDrafting::keep_ready_blocks(const StepPlan& plan, StepReport& report) {
  const size_t V = static_cast<size_t>(vocab_);
  for (Work& work : work_) {
    for (size_t i = 0; i < work.proposals.size(); ++i) {
      EngineSession& s = *work.sessions[i];
      DraftProposal& got = work.proposals[i];
      const StepPlan::Entry* e = work.ahead_of[i];
      if (e) {
        ++report.ahead_drafts;
        ++s.result.stats.ahead_drafts;
      }
      if (s.state != SessionState::running || got.tokens.empty()) {
        if (e) ++report.ahead_misses;
        continue;
      }
      if (!e) {  // ping-pong: drafted from the committed text, which has not moved
        s.ready = EngineSession::ReadyBlock{s.tokens.size(), std::move(got)};
        continue;
      }
      // Ahead: the whole block kept and the target's token is the guess.
      const bool hit = e->first_row >= 0 &&
                       e->outcome.accepted == static_cast<int>(e->proposal.tokens.size()) &&
                       got.tokens.size() >= 2 && e->outcome.token == got.tokens.front();
      if (!hit) {
        ++report.ahead_misses;
        continue;
      }
      ++report.ahead_hits;
      ++s.result.stats.ahead_hits;
      DraftProposal next;  // the block after the guess, and its q rows
      next.tokens.assign(got.tokens.begin() + 1, got.tokens.end());
      if (!got.q.empty()) next.q = got.q.slice(V, got.q.size() - V);
      next.q_at_draft_rank = got.q_at_draft_rank;
      next.q_step = got.q_step;
      next.q_first_row = got.q_first_row + 1;
      s.ready = EngineSession::ReadyBlock{s.tokens.size(), std::move(next)};
    }
  }
  work_.clear();
}

}  // namespace tandem
