// Drafting: the engine's drafters and the draft step of a plain (lockstep)
// step: one batched propose() per drafter for its sessions that verify this
// step, a ready block (pipelined_drafting.h) standing in for a draft where
// one was made earlier. Also what each drafter's passes cost, for c.
// Not thread-safe: owned by the engine thread.
#pragma once

#include <string>
#include <vector>

#include "workers/speculation/drafter.h"
#include "workers/speculation/engine_types.h"
#include "workers/speculation/step_plan.h"
#include "workers/speculation/target_cost_model.h"

namespace tandem {

struct DrafterSlot {
  Drafter* drafter = nullptr;
  std::string name;
  // Seconds of one draft pass by the number of sessions drafting in it
  // (the same bucketed model as the target's): c at batch B is
  // D(B_d) / T(B), B_d the running sessions that use this drafter.
  TargetCostModel pass_cost;
  // Seconds of drafting ahead (a whole call) by sessions, as the drafter
  // measured it: what a pipelined step hides behind the target pass.
  TargetCostModel ahead_cost;
  double cost_ratio = 0;  // c at the last step's batch (reported)
};

class Drafting {
 public:
  // Drafters by name (their name() values, unique; the first is the
  // default); not owned. Throws Error(invalid_argument) on a null or a
  // repeated name.
  explicit Drafting(const std::vector<Drafter*>& drafters);

  std::vector<DrafterSlot>& slots() { return slots_; }
  const std::vector<DrafterSlot>& slots() const { return slots_; }
  // The slot named `name`; empty names the default (0). Throws
  // Error(invalid_argument) naming the drafters there are.
  size_t index_of(const std::string& name) const;
  std::vector<std::string> names() const;

  // The draft step: proposals for the plan's verifying entries with γ > 0.
  void draft(StepPlan& plan, StepReport& report);
  // After the step: each drafter's pass time at the number of sessions it
  // drafted for.
  void record_costs(const StepPlan& plan, StepReport& report);

 private:
  std::vector<DrafterSlot> slots_;
};

}  // namespace tandem
