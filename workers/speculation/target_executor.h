// TargetExecutor: where the engine's target passes run.
//
// The engine describes each pass as a wire::TargetStep (the same message a
// distributed job sends to its tensor-parallel group) and gets back a
// wire::TargetResult: n, t and β for every block it asked to verify.
// Implementations: TargetStepRunner (the model in this process, or one
// shard of it on a worker rank) and RemoteTarget (coordinator/cluster: the
// step goes to the TP group over the Communicator). Either way the engine's
// code path is the same.
#pragma once

#include "transport/messages.h"

namespace tandem {

class TargetExecutor {
 public:
  virtual ~TargetExecutor() = default;
  // Frees step.released, feeds every sequence, verifies the blocks that ask
  // for it. May move large fields (q rows) out of `step`.
  virtual void run(wire::TargetStep& step, wire::TargetResult& result) = 0;
};

}  // namespace tandem
