// EngineSession: one request's state inside the engine, shared by its parts
// (the step planner queues and admits it, the γ controller chooses its γ,
// drafting fills its ready block, the engine commits its tokens). Not part
// of the public API.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "workers/kv_cache.h"
#include "workers/speculation/drafter.h"
#include "workers/speculation/engine_types.h"

namespace tandem {

struct EngineSession {
  SessionKey key = 0;
  SpeculationRequest request;
  std::vector<int32_t> tokens;  // prompt + generated, kept across preemptions
  int prompt_length = 0;
  size_t drafter = 0;           // index into the engine's drafters
  Drafter* draft = nullptr;     // that drafter
  SessionState state = SessionState::waiting;
  // Target KV while running (0 while waiting or finished): holds positions
  // [0, cache.length(seq)), at most tokens.size() - 1 once it has verified.
  SequenceId seq = 0;
  // False from (re)admission until its final prefill chunk was verified:
  // until then every committed token it feeds is prefill.
  bool verified_since_admission = false;
  SpeculationResult result;
  // Probing (GammaController): verifying steps whose automatic γ was 0
  // since the last probe, and the steps at γ = 0 between probes (0: the
  // first interval, tuning.probe_every).
  int steps_at_zero_gamma = 0;
  int probe_interval = 0;
  // A block drafted while the target was busy (ahead of a block that was
  // then accepted whole, or apart in a ping-pong step), verified next
  // without drafting. Valid while the committed text is `length` long.
  struct ReadyBlock {
    size_t length = 0;
    DraftProposal proposal;
  };
  std::optional<ReadyBlock> ready;

  int generated() const { return static_cast<int>(tokens.size()) - prompt_length; }
  // What drafters get: the request's processing, or null when it asks none.
  const LogitProcessing* processing() const {
    return request.processing.active() ? &request.processing : nullptr;
  }
};

}  // namespace tandem
