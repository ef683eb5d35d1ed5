// TargetPass: the verify and accept steps. verify() puts every planned
// session into one ragged target pass, [prefill chunk or catch-up token,
// x_1..x_γ] each, and runs it on the executor, where the backend's
// verification op (block_verification.h) decides n and the target's token
// for the blocks that verify; accept() takes those outcomes into the plan
// and the sessions' β statistics, and the pass into the KV account.
// Also the scratch passes calibration times.
//
// Dimension glossary: B sessions in the target pass, T new tokens in it,
// R rows with logits (Σ γ_i + 1 over the sessions that verify), V vocabulary.
// Not thread-safe: owned by the engine thread.
#pragma once

#include <span>

#include "workers/model_config.h"
#include "workers/speculation/engine_types.h"
#include "workers/speculation/step_plan.h"
#include "workers/speculation/target_executor.h"
#include "workers/speculation/target_kv.h"

namespace tandem {

class TargetPass {
 public:
  TargetPass(TargetExecutor& target, TargetKv& kv, const ModelConfig& config)
      : target_(target),
        kv_(kv),
        context_(config.max_position_embeddings),
        vocab_(config.vocab_size) {}

  // Runs the pass over the plan's live entries (their feed, first logits
  // row, the pass's time and result into the plan). False when nothing was
  // fed.
  bool verify(StepPlan& plan, StepReport& report);
  // The outcomes into the entries and their sessions' statistics; a
  // block's own fault (its outcome's, or a token outside the vocabulary)
  // into its entry's fault, for the engine to end that session.
  void accept(StepPlan& plan);
  // One pass of `tokens` new tokens over scratch sequences, every token
  // asking for logits (as a verification pass does). Its seconds, or a
  // negative number when the cache cannot hold it; the sequences are
  // released either way.
  double timed_pass(int tokens);

 private:
  void run(TargetStep& step, std::span<const DeviceRows> local_q, TargetResult& result);

  TargetExecutor& target_;
  TargetKv& kv_;
  int context_;
  int vocab_;
};

}  // namespace tandem
