#include "workers/speculation/drafting.h"

#include <algorithm>
#include <set>

#include "common/error.h"
#include "workers/speculation/speculative_session.h"

namespace tandem {

Drafting::Drafting(const std::vector<Drafter*>& drafters) {
  std::set<std::string> names;
  for (Drafter* drafter : drafters) {
    require(drafter != nullptr, ErrorKind::invalid_argument, "drafter list holds a null drafter");
    std::string name = drafter->name();
    require(names.insert(name).second, ErrorKind::invalid_argument,
            "two drafters are named '" + name + "': drafter names must be unique");
    DrafterSlot slot;
    slot.drafter = drafter;
    slot.name = std::move(name);
    slots_.push_back(std::move(slot));
  }
}

size_t Drafting::index_of(const std::string& name) const {
  if (name.empty()) return 0;
  for (size_t d = 0; d < slots_.size(); ++d)
    if (slots_[d].name == name) return d;
  std::string known;
  for (const DrafterSlot& d : slots_) known += (known.empty() ? "" : ", ") + d.name;
  throw Error(ErrorKind::invalid_argument,
              "speculation.drafter: unknown drafter '" + name + "' (this server has: " + known + ")");
}

std::vector<std::string> Drafting::names() const {
  std::vector<std::string> names;
  for (const DrafterSlot& d : slots_) names.push_back(d.name);
  return names;
}

void Drafting::draft(StepPlan& plan, StepReport& report) {
  plan.draft_seconds.assign(slots_.size(), 0.0);
  plan.draft_passes.assign(slots_.size(), 0);
  plan.draft_sessions.assign(slots_.size(), 0);
  for (size_t d = 0; d < slots_.size(); ++d) {
    std::vector<DraftRequest> requests;
    std::vector<StepPlan::Entry*> askers;
    for (StepPlan::Entry& e : plan.entries) {
      EngineSession& s = *e.session;
      if (e.dropped || !e.chunk.verifies || e.gamma == 0 || s.drafter != d) continue;
      if (e.from_ready && s.ready) {
        e.proposal = std::move(s.ready->proposal);
        s.ready.reset();
        continue;
      }
      requests.push_back({s.key, s.tokens, e.gamma, s.request.sampling, s.processing(),
                          s.request.cache_salt});
      askers.push_back(&e);
    }
    if (requests.empty()) continue;
    plan.draft_sessions[d] = static_cast<int>(requests.size());
    std::vector<DraftProposal> proposals;
    const auto start = Clock::now();
    slots_[d].drafter->propose(requests, proposals);
    report.draft_wait_seconds += seconds_since(start);
    plan.draft_seconds[d] = slots_[d].drafter->last_seconds();
    for (size_t r = 0; r < requests.size(); ++r) {
      askers[r]->proposal = std::move(proposals[r]);
      plan.draft_passes[d] =
          std::max(plan.draft_passes[d], static_cast<int>(askers[r]->proposal.tokens.size()));
    }
  }
}

void Drafting::record_costs(const StepPlan& plan, StepReport& report) {
  // The first pass also catches the draft cache up, a real cost of
  // drafting. Until a drafter has drafted once, its c is 0: speculation is
  // tried.
  for (size_t d = 0; d < slots_.size(); ++d) {
    report.draft_seconds += plan.draft_seconds[d];
    report.draft_busy_seconds += plan.draft_seconds[d];
    if (plan.draft_passes[d] == 0) continue;
    const double per_pass = plan.draft_seconds[d] / plan.draft_passes[d];
    slots_[d].pass_cost.record(plan.draft_sessions[d], per_pass);
  }
}

}  // namespace tandem
