// SpeculativeEngine::step(): admit, plan, reserve, draft, verify, accept,
// commit (the order speculative_engine.h describes).
//
// Dimension glossary: B sessions in the target pass, T new tokens in it,
// R rows with logits (Σ γ_i + 1 over the sessions that verify), V vocabulary.
#include <algorithm>
#include <chrono>
#include <string>

#include "common/error.h"
#include "workers/speculation/speculative_engine.h"
#include "workers/speculation/speculative_session.h"
#include "workers/speculation/speculative_step_plan.h"

namespace tandem {
namespace {

// Sessions whose best γ is 0 still draft one token after this many verifying
// steps, so that their α estimate can recover if the text becomes
// predictable. Each probe that does not bring the session back to drafting
// doubles the interval, up to kMaxProbeEvery: a probe costs the draft
// cache's catch-up over every token since the last one, which under heavy
// batching is most of what drafting costs.
constexpr int kProbeEvery = 8;
constexpr int kMaxProbeEvery = 64;

// Where the q rows of an entry's drafts are for the verifier.
QSource q_source_of(const DraftProposal& proposal) {
  if (proposal.q_at_draft_rank) return QSource::draft_rank;
  return proposal.q.empty() ? QSource::one_hot : QSource::local;
}

}  // namespace

double SpeculativeEngine::drafter_cost(const DrafterSlot& slot, int drafting, int batch) const {
  const double draft_pass = slot.pass_cost.seconds(drafting);
  const double target_pass = cost_model_.seconds(batch);
  if (!(draft_pass > 0) || !(target_pass > 0)) return slot.cost_ratio;  // nothing measured yet
  return draft_pass / target_pass;
}

SpeculativeEngine::GammaChoice SpeculativeEngine::choose_gamma(const Session& s,
                                                              const StepCost& v, double c,
                                                              bool allow_drafting) const {
  const SpeculationStats& stats = s.result.stats;
  if (s.request.gamma.automatic && !allow_drafting) return {};
  int gamma = s.request.gamma.choose(stats.beta_sum, stats.beta_count, c, v);
  const bool policy_zero = s.request.gamma.automatic && gamma == 0;
  const int interval = s.probe_interval > 0 ? s.probe_interval : kProbeEvery;
  const bool probe = policy_zero && s.steps_at_zero_gamma + 1 >= interval;
  if (probe) gamma = 1;
  // Each step emits at least one token, so drafting past max_tokens - 1 more
  // (or past the context) would only be thrown away.
  const int length = static_cast<int>(s.tokens.size());
  gamma = std::min({gamma, s.request.max_new_tokens - s.generated() - 1,
                    config_.max_position_embeddings - length});
  return {std::max(gamma, 0), policy_zero, probe};
}

SpeculativeEngine::StepPlan SpeculativeEngine::plan_step() {
  StepPlan plan;
  plan.batch = static_cast<int>(running_.size());
  // v(k) for every block length some running session may choose.
  int longest_block = 1;
  for (const Session* s : running_) longest_block = std::max(longest_block, s->request.gamma.gamma + 1);
  plan.v.assign(static_cast<size_t>(longest_block) + 1, 1.0);
  for (int k = 2; k <= longest_block; ++k)
    plan.v[static_cast<size_t>(k)] = cost_model_.relative_cost(plan.batch, k);
  const StepCost v = [&plan](int k) { return plan.v[static_cast<size_t>(k)]; };
  // c per drafter at this batch: its sessions draft together in one pass.
  std::vector<int> users(drafters_.size(), 0);
  for (const Session* s : running_) ++users[s->drafter];
  std::vector<double> c(drafters_.size());
  for (size_t d = 0; d < drafters_.size(); ++d) {
    c[d] = drafter_cost(drafters_[d], std::max(users[d], 1), plan.batch);
    if (users[d] > 0) drafters_[d].cost_ratio = c[d];
  }
  const bool allow_drafting = guard_.allow_drafting(plan.batch);
  const ShapeChoice shape = choose_step_shape();
  plan.shape = shape.shape;

  // A ready block stands while the committed text has not moved.
  for (Session* s : running_)
    if (s->ready && s->ready->length != s->tokens.size()) s->ready.reset();
  if (plan.shape == StepShape::pingpong) {
    std::vector<Session*> candidates;  // decoding, nothing ready, a drafter that overlaps
    std::vector<int> gammas;
    for (Session* s : running_) {
      if (!s->verified_since_admission || s->ready || !s->request.pipeline ||
          !drafters_[s->drafter].drafter->overlaps())
        continue;
      const GammaChoice choice = choose_gamma(*s, v, c[s->drafter], allow_drafting);
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

  std::vector<ChunkRequest> requests;
  for (Session* s : running_) {
    if (std::find(plan.apart.begin(), plan.apart.end(), s) != plan.apart.end()) continue;
    StepPlan::Entry entry;
    entry.session = s;
    if (s->ready) {
      // Drafted in an earlier step, under the same caps (it was the γ its
      // policy chose then): verified as it is.
      entry.gamma = static_cast<int>(s->ready->proposal.tokens.size());
      entry.from_ready = true;
    } else {
      const GammaChoice choice = choose_gamma(*s, v, c[s->drafter], allow_drafting);
      entry.gamma = choice.gamma;
      entry.policy_zero = choice.policy_zero;
      entry.probe = choice.probe;
    }
    plan.entries.push_back(std::move(entry));
    requests.push_back({static_cast<int>(s->tokens.size()) - cache_.length(s->seq),
                        plan.entries.back().gamma});
  }
  const std::vector<ChunkPlan> chunks = plan_chunks(requests, limits_.step_token_budget);
  for (size_t i = 0; i < chunks.size(); ++i) plan.entries[i].chunk = chunks[i];
  return plan;
}

void SpeculativeEngine::reserve(StepPlan& plan) {
  auto drop = [&plan](Session* s) {
    for (auto& e : plan.entries)
      if (e.session == s) e.dropped = true;
  };
  for (StepPlan::Entry& e : plan.entries) {
    if (e.dropped) continue;
    Session& s = *e.session;
    auto needed = [&] {
      return cache_.length(s.seq) + e.chunk.fed + (e.chunk.verifies ? e.gamma : 0);
    };
    while (!cache_.reserve(s.seq, needed())) {
      Session& youngest = *running_.back();
      if (&youngest != &s) {
        drop(&youngest);
        preempt(youngest);
        continue;
      }
      if (running_.size() > 1) {  // it is the youngest itself: it yields
        e.dropped = true;
        preempt(s);
        break;
      }
      // Alone, with every other block free. Without its drafts it may still
      // fit (a shorter block, same distribution); if not, its context can
      // never grow on this cache, and ending it with what it has is the
      // only outcome that neither loops nor loses its output: max_tokens
      // was, in effect, what the cache can hold.
      if (e.chunk.verifies && e.gamma > 0) {
        e.gamma = 0;
        e.from_ready = false;
        s.ready.reset();
        continue;
      }
      e.dropped = true;
      finish(s, FinishReason::length);
      break;
    }
  }
}

void SpeculativeEngine::draft(StepPlan& plan) {
  plan.draft_seconds.assign(drafters_.size(), 0.0);
  plan.draft_passes.assign(drafters_.size(), 0);
  plan.draft_sessions.assign(drafters_.size(), 0);
  for (size_t d = 0; d < drafters_.size(); ++d) {
    std::vector<DraftRequest> requests;
    std::vector<StepPlan::Entry*> askers;
    for (StepPlan::Entry& e : plan.entries) {
      Session& s = *e.session;
      if (e.dropped || !e.chunk.verifies || e.gamma == 0 || s.drafter != d) continue;
      if (e.from_ready && s.ready) {
        e.proposal = std::move(s.ready->proposal);
        s.ready.reset();
        continue;
      }
      requests.push_back({s.key, s.tokens, e.gamma, s.request.sampling});
      askers.push_back(&e);
    }
    if (requests.empty()) continue;
    plan.draft_sessions[d] = static_cast<int>(requests.size());
    std::vector<DraftProposal> proposals;
    const auto start = Clock::now();
    drafters_[d].drafter->propose(requests, proposals);
    last_step_.draft_wait_seconds += seconds_since(start);
    plan.draft_seconds[d] = drafters_[d].drafter->last_seconds();
    for (size_t r = 0; r < requests.size(); ++r) {
      askers[r]->proposal = std::move(proposals[r]);
      plan.draft_passes[d] =
          std::max(plan.draft_passes[d], static_cast<int>(askers[r]->proposal.tokens.size()));
    }
  }
}

int SpeculativeEngine::commit(Session& s, std::span<const int32_t> accepted, int32_t token) {
  std::vector<int32_t> emitted(accepted.begin(), accepted.end());
  emitted.push_back(token);
  const auto& stops = s.request.stop_ids;
  int appended = 0;
  for (int32_t t : emitted) {
    s.tokens.push_back(t);
    s.result.tokens.push_back(t);
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
      finish(s, reason);
      return appended;
    }
  }
  // Keep the target's K/V for committed tokens but the last (fed next step).
  const int committed = static_cast<int>(s.tokens.size());
  truncate_sequence(s.seq, std::min(cache_.length(s.seq), committed - 1));
  drafters_[s.drafter].drafter->commit(s.key, committed);
  return appended;
}

bool SpeculativeEngine::run_target(StepPlan& plan) {
  TargetStep step;
  std::vector<DeviceRows> local_q;  // per sequence: the drafter's rows, where it left them
  std::vector<StepPlan::Entry*> fed;
  for (StepPlan::Entry& e : plan.entries) {
    if (e.dropped) continue;
    Session& s = *e.session;
    e.start = cache_.length(s.seq);
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
      e.first_row = plan.rows;
      plan.rows += sequence.logit_count;
    }
    step.sequences.push_back(std::move(sequence));
    local_q.push_back(std::move(e.proposal.q));
    fed.push_back(&e);
    last_step_.target_tokens += static_cast<int>(e.feed.size());
  }
  if (fed.empty()) return false;
  plan.start = Clock::now();
  TargetResult result;
  run_target_step(step, local_q, result);
  plan.target_seconds = seconds_since(plan.start);
  last_step_.forward_seconds = result.forward_seconds;
  last_step_.communication_seconds = result.communication_seconds;
  cost_model_.record(last_step_.target_tokens, plan.target_seconds);

  size_t outcome = 0;
  for (StepPlan::Entry* e : fed) {
    Session& s = *e->session;
    // The engine's account of the cache (an in-process forward over this
    // same cache has already recorded it; a remote one has not).
    cache_.set_length(s.seq, e->start + static_cast<int>(e->feed.size()));
    if (e->first_row < 0) continue;
    require(outcome < result.outcomes.size(), ErrorKind::internal,
            "the target pass returned fewer outcomes than blocks it verified");
    const TargetResult::Outcome& out = result.outcomes[outcome++];
    e->outcome = {out.accepted, out.token};
    s.result.stats.beta_sum += out.beta_sum;
    s.result.stats.beta_count += out.beta_count;
  }
  return true;
}

void SpeculativeEngine::commit_and_report(StepPlan& plan) {
  const double target_seconds = seconds_since(plan.start);  // forward and accept
  int verified = 0, gamma_sum = 0;
  for (StepPlan::Entry& e : plan.entries) {
    if (e.dropped) continue;
    Session& s = *e.session;
    StepSessionReport report{s.key, drafters_[s.drafter].name};
    report.fed = static_cast<int>(e.feed.size());
    if (!s.verified_since_admission) report.prefill_tokens = e.chunk.fed;
    s.result.stats.prefill_tokens += report.prefill_tokens;
    if (e.first_row >= 0) {
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
      if (e.probe) {  // back off: the next probe waits twice as long
        s.steps_at_zero_gamma = 0;
        s.probe_interval = std::min(2 * std::max(s.probe_interval, kProbeEvery), kMaxProbeEvery);
      } else if (e.policy_zero) {
        ++s.steps_at_zero_gamma;
      } else if (report.gamma > 0 && s.request.gamma.automatic) {
        s.probe_interval = 0;  // drafting on its own merits again
      }
      s.verified_since_admission = true;
      ++verified;
      gamma_sum += report.gamma;
      report.emitted = commit(
          s, std::span(e.proposal.tokens).first(static_cast<size_t>(e.outcome.accepted)),
          e.outcome.token);
    }
    last_step_.sessions.push_back(std::move(report));
  }
  last_step_.target_seconds = plan.target_seconds;
  last_step_.mean_gamma = verified ? static_cast<double>(gamma_sum) / verified : 0.0;
}

void SpeculativeEngine::record_costs(const StepPlan& plan) {
  // Each drafter's pass time at the number of sessions it drafted for (the
  // first pass also catches the draft cache up, a real cost of drafting).
  // Until a drafter has drafted once, its c is 0: speculation is tried.
  for (size_t d = 0; d < drafters_.size(); ++d) {
    last_step_.draft_seconds += plan.draft_seconds[d];
    last_step_.draft_busy_seconds += plan.draft_seconds[d];
    if (plan.draft_passes[d] == 0) continue;
    DrafterSlot& slot = drafters_[d];
    const double per_pass = plan.draft_seconds[d] / plan.draft_passes[d];
    slot.pass_cost.record(plan.draft_sessions[d], per_pass);
  }
}

void SpeculativeEngine::step() {
  last_step_ = StepReport{};
  admit();
  if (running_.empty()) return;
  const auto start = Clock::now();
  StepPlan plan = plan_step();
  reserve(plan);
  draft(plan);
  begin_pipelined_drafts(plan);  // runs during the target pass where it can
  bool ran = false;
  try {
    ran = run_target(plan);
  } catch (...) {
    // Collect what is in flight, so a drafter is never left between begin
    // and finish; the target's failure is the one to report.
    try {
      finish_pipelined_drafts(plan);
    } catch (...) {
    }
    throw;
  }
  finish_pipelined_drafts(plan);
  if (ran) commit_and_report(plan);
  keep_ready_blocks(plan);
  record_costs(plan);
  last_step_.shape = plan.shape;
  last_step_.step_seconds = seconds_since(start);
  record_throughput(plan, last_step_.step_seconds);
}

void SpeculativeEngine::record_throughput(const StepPlan& plan, double seconds) {
  // Decode steps only: prefill tokens cost time but emit nothing yet.
  int emitted = 0;
  bool drafted = false;
  for (const StepSessionReport& r : last_step_.sessions) {
    if (r.prefill_tokens > 0 || !r.verified) return;
    emitted += r.emitted;
    drafted = drafted || r.gamma > 0;
  }
  guard_.record(plan.batch, drafted, emitted, seconds);
}

}  // namespace tandem
