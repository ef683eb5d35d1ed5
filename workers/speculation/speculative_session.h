// SpeculativeEngine::Session: one request's state inside the engine, shared
// by the engine's source files (speculative_engine.cpp: lifecycle and
// scheduling; speculative_step.cpp: one step). Not part of the public API.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "workers/speculation/speculative_engine.h"

namespace tandem {

struct SpeculativeEngine::Session {
  SessionKey key = 0;
  SpeculationRequest request;
  std::vector<int32_t> tokens;  // prompt + generated, kept across preemptions
  int prompt_length = 0;
  size_t drafter = 0;           // index into the engine's drafters
  SessionState state = SessionState::waiting;
  // Target KV while running (0 while waiting or finished): holds positions
  // [0, cache.length(seq)), at most tokens.size() - 1 once it has verified.
  SequenceId seq = 0;
  // False from (re)admission until its final prefill chunk was verified:
  // until then every committed token it feeds is prefill.
  bool verified_since_admission = false;
  SpeculationResult result;
  int steps_at_zero_gamma = 0;  // verifying steps whose automatic γ was 0 since the last probe
  int probe_interval = 0;       // steps at γ = 0 between probes (0: the first interval)
  // A block drafted while the target was busy (ahead of a block that was
  // then accepted whole, or apart in a ping-pong step), verified next
  // without drafting. Valid while the committed text is `length` long.
  struct ReadyBlock {
    size_t length = 0;
    DraftProposal proposal;
  };
  std::optional<ReadyBlock> ready;

  int generated() const { return static_cast<int>(tokens.size()) - prompt_length; }
};

}  // namespace tandem
