// TargetKv: the engine's account of the target's KV blocks (admission,
// reservation and truncation are decided on it), and the releases and
// truncations the executor's own cache has yet to follow: they go with the
// next target pass (TargetStep::released, truncated), which also gets its
// step number here. With an in-process target over this same cache the
// executor has nothing to follow; a remote one mirrors the account.
// Not thread-safe: owned by the engine thread.
#pragma once

#include <cstdint>
#include <vector>

#include "workers/kv_cache.h"
#include "workers/speculation/target_step.h"

namespace tandem {

class TargetKv {
 public:
  explicit TargetKv(PagedKvCache& cache) : cache_(cache) {}

  PagedKvCache& cache() const { return cache_; }
  // Frees the sequence here at once, in the executor's cache with the next pass.
  void release(SequenceId seq);
  // Drops positions from `length` on (no-op when it holds no more), here
  // and, before the next pass reserves, in the executor's cache.
  void truncate(SequenceId seq, int length);
  // Numbers the next pass and moves what the executor must follow into it.
  void stamp(TargetStep& step);

 private:
  PagedKvCache& cache_;
  std::vector<int64_t> released_;           // freed since the last pass
  std::vector<int64_t> truncated_;          // truncated since then...
  std::vector<int32_t> truncated_lengths_;  // ...to these lengths
  uint64_t steps_ = 0;                      // passes stamped so far
};

}  // namespace tandem
