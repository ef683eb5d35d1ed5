// TargetStepRunner: runs a TargetStep on a model in this process.
//
// Two uses, one class:
// - shared cache: the engine's own process holds the whole target; the
//   engine already reserved and truncated the sequences in `cache`, so the
//   runner only feeds them (the single-process server and every test);
// - mirrored cache: a worker rank holding the whole target or one
//   tensor-parallel shard keeps its own KV cache, driven by the
//   coordinator's bookkeeping: free the released sequences, truncate each
//   sequence to the step's start, adopt the coordinator's block numbers
//   (TargetStep::Sequence::table; PagedKvCache::adopt_blocks), feed. The
//   coordinator's ids map to local ones; block numbers are the
//   coordinator's, so a sequence the coordinator started on cached prefix
//   blocks reads the K/V this rank wrote there for another sequence. Such
//   a cache never turns prefix caching on itself (its driver does).
// Verification runs where the logits are (target rank 0, or the only
// rank); other shards return an empty result.
#pragma once

#include <optional>
#include <unordered_map>

#include "workers/kv_cache.h"
#include "workers/llama_model.h"
#include "workers/speculation/block_verification.h"
#include "workers/speculation/target_executor.h"

namespace tandem {

class TargetStepRunner final : public TargetExecutor {
 public:
  enum class CacheMode { shared, mirrored };
  TargetStepRunner(LlamaModel& model, PagedKvCache& cache, CacheMode mode,
                   QRowsSource q_rows = {});
  TargetStepRunner(const TargetStepRunner&) = delete;
  TargetStepRunner& operator=(const TargetStepRunner&) = delete;

  using TargetExecutor::run;
  void run(TargetStep& step, std::span<const DeviceRows> local_q,
           TargetResult& result) override;

  // Target rank 0 between steps: q rows the draft rank sent ahead of need.
  void deliver_q_rows(ArrivedQRows message) {
    if (q_rows_) q_rows_->deliver(std::move(message));
  }

 private:
  // Mirrored mode: applies releases, truncations and block tables.
  void replay(const TargetStep& step);

  LlamaModel& model_;
  PagedKvCache& cache_;
  CacheMode mode_;
  std::optional<QRowsInbox> q_rows_;  // when the draft has its own rank
  std::unordered_map<int64_t, SequenceId> mirror_;  // coordinator's id → local id
  VerifyScratch verify_scratch_;
};

}  // namespace tandem
