// TargetExecutor: where the engine's target passes run.
//
// The engine describes each pass as a TargetStep (the same message a
// distributed job sends to its tensor-parallel group) and gets back a
// TargetResult: n, t and β for every block it asked to verify.
// Implementations: TargetStepRunner (the model in this process, or one
// shard of it on a worker rank) and RemoteTarget (cluster/proxies/: the
// step goes to the TP group over the Communicator). Either way the engine's
// code path is the same.
#pragma once

#include <span>

#include "kernels/device_rows.h"
#include "workers/speculation/target_step.h"

namespace tandem {

class TargetExecutor {
 public:
  virtual ~TargetExecutor() = default;
  // Frees step.released, feeds every sequence, verifies the blocks that ask
  // for it. May move large fields (q rows) out of `step`. local_q: one per
  // sequence, the rows of those whose q_source is local (the drafter's, in
  // this process's memory, on the draft's device); empty when none is.
  virtual void run(TargetStep& step, std::span<const DeviceRows> local_q,
                   TargetResult& result) = 0;
  void run(TargetStep& step, TargetResult& result) { run(step, {}, result); }
};

}  // namespace tandem
