// TargetKv: the engine's account of the target's KV blocks (admission,
// reservation and truncation are decided on it), and what the executor's
// own cache has yet to follow: the releases and truncations since the last
// pass (TargetStep::released, truncated) and each fed sequence's block
// numbers (TargetStep::Sequence::table), which go with the next pass, and
// its step number. With an in-process target over this same cache the
// executor has nothing to follow; a remote one mirrors the account, block
// for block, so that a sequence starting on cached prefix blocks (prefix
// caching) reads on every rank the blocks the coordinator chose.
// Not thread-safe: owned by the engine thread.
#pragma once

#include <cstdint>
#include <unordered_set>
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
  // and, before the next pass reserves, in the executor's cache. The cache
  // may keep fewer (a shared block is kept whole or not at all): the
  // executor follows the length it kept.
  void truncate(SequenceId seq, int length);
  // Numbers the next pass, moves what the executor must follow into it and
  // gives each of its sequences its block table (reserved by then).
  void stamp(TargetStep& step);

 private:
  PagedKvCache& cache_;
  std::vector<int64_t> released_;           // freed since the last pass
  std::vector<int64_t> truncated_;          // truncated since then...
  std::vector<int32_t> truncated_lengths_;  // ...to these lengths
  std::unordered_set<SequenceId> sent_;     // fed since admitted: tables from start on
  uint64_t steps_ = 0;                      // passes stamped so far
};

}  // namespace tandem
