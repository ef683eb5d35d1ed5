#include "workers/speculation/gamma_controller.h"

#include <algorithm>

#include "workers/speculation/drafting.h"
#include "workers/speculation/speculative_session.h"

namespace tandem {

GammaController::GammaController(const SpeculationTuning& tuning, int context_length)
    : tuning_(tuning), context_length_(context_length), guard_(tuning) {}

double GammaController::alpha(double beta_sum, double beta_count) const {
  return (beta_sum + tuning_.prior_alpha * tuning_.prior_weight) /
         (beta_count + tuning_.prior_weight);
}

int GammaController::policy_gamma(const GammaPolicy& policy, double beta_sum, double beta_count,
                                  double c, const StepCost& v) const {
  if (!policy.automatic) return policy.gamma;
  return best_gamma(alpha(beta_sum, beta_count), c, policy.gamma, v);
}

double GammaController::drafter_cost(const DrafterSlot& slot, int drafting, int batch) const {
  const double draft_pass = slot.pass_cost.seconds(drafting);
  const double target_pass = cost_model_.seconds(batch);
  if (!(draft_pass > 0) || !(target_pass > 0)) return slot.cost_ratio;  // nothing measured yet
  return draft_pass / target_pass;
}

void GammaController::begin_step(const std::vector<EngineSession*>& running,
                                 std::vector<DrafterSlot>& drafters) {
  const int batch = static_cast<int>(running.size());
  batch_ = std::max(batch, 1);
  int longest_block = 1;
  for (const EngineSession* s : running)
    longest_block = std::max(longest_block, s->request.gamma.gamma + 1);
  v_.assign(static_cast<size_t>(longest_block) + 1, 1.0);
  for (int k = 2; k <= longest_block; ++k)
    v_[static_cast<size_t>(k)] = cost_model_.relative_cost(batch, k);
  // c per drafter at this batch: its sessions draft together in one pass.
  std::vector<int> users(drafters.size(), 0);
  for (const EngineSession* s : running) ++users[s->drafter];
  c_.assign(drafters.size(), 0.0);
  for (size_t d = 0; d < drafters.size(); ++d) {
    c_[d] = drafter_cost(drafters[d], std::max(users[d], 1), batch);
    if (users[d] > 0) drafters[d].cost_ratio = c_[d];
  }
  allow_drafting_ = guard_.allow_drafting(batch);
}

GammaChoice GammaController::choose(const EngineSession& s) const {
  const SpeculationStats& stats = s.result.stats;
  const GammaPolicy& policy = s.request.gamma;
  if (policy.automatic && !allow_drafting_) return {};
  const StepCost v = [this](int k) { return v_[static_cast<size_t>(k)]; };
  int gamma = policy_gamma(policy, stats.beta_sum, stats.beta_count, c_[s.drafter], v);
  const bool policy_zero = policy.automatic && gamma == 0;
  const int interval = s.probe_interval > 0 ? s.probe_interval : tuning_.probe_every;
  const bool probe = policy_zero && s.steps_at_zero_gamma + 1 >= interval;
  if (probe) gamma = 1;
  return {std::max(cap(s, gamma), 0), policy_zero, probe};
}

double GammaController::predicted_speedup(const EngineSession& s, int gamma) const {
  if (gamma <= 0) return 1.0;
  const auto k = static_cast<size_t>(gamma) + 1;
  // A block drafted in an earlier step may be longer than this step's ceilings.
  const double v = k < v_.size() ? v_[k] : cost_model_.relative_cost(batch_, gamma + 1);
  const double c = s.drafter < c_.size() ? c_[s.drafter] : 0.0;
  return expected_speedup(alpha(s.result.stats), c, gamma, v);
}

double GammaController::measured_speedup(int batch) const {
  const double plain = guard_.plain_rate(batch);
  const double drafting = guard_.drafting_rate(batch);
  return plain > 0 && drafting > 0 ? drafting / plain : 0.0;
}

int GammaController::cap(const EngineSession& s, int gamma, int ahead) const {
  const int length = static_cast<int>(s.tokens.size()) + ahead;
  return std::min({gamma, s.request.max_new_tokens - (s.generated() + ahead) - 1,
                   context_length_ - length});
}

void GammaController::verified(EngineSession& s, const GammaChoice& choice, int drafted) const {
  if (choice.probe) {  // back off: the next probe waits twice as long
    s.steps_at_zero_gamma = 0;
    s.probe_interval = std::min(2 * std::max(s.probe_interval, tuning_.probe_every),
                                tuning_.max_probe_every);
  } else if (choice.policy_zero) {
    ++s.steps_at_zero_gamma;
  } else if (drafted > 0 && s.request.gamma.automatic) {
    s.probe_interval = 0;  // drafting on its own merits again
  }
}

void GammaController::record_step(int batch, const StepReport& step) {
  // Decode steps only: prefill tokens cost time but emit nothing yet.
  int emitted = 0;
  bool drafted = false;
  for (const StepSessionReport& r : step.sessions) {
    if (r.prefill_tokens > 0 || !r.verified) return;
    emitted += r.emitted;
    drafted = drafted || r.gamma > 0;
  }
  guard_.record(batch, drafted, emitted, step.step_seconds);
}

}  // namespace tandem
