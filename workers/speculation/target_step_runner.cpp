#include "workers/speculation/target_step_runner.h"

#include <algorithm>
#include <chrono>
#include <string>

#include "common/error.h"
#include "workers/speculation/logprob_rows.h"

namespace tandem {

TargetStepRunner::TargetStepRunner(LlamaModel& model, PagedKvCache& cache, CacheMode mode,
                                   QRowsSource q_rows)
    : model_(model), cache_(cache), mode_(mode) {
  if (q_rows) q_rows_.emplace(std::move(q_rows));
}

void TargetStepRunner::replay(const TargetStep& step) {
  for (int64_t seq : step.released) {
    auto it = mirror_.find(seq);
    if (it == mirror_.end()) continue;  // released before it was ever fed
    cache_.release(it->second);
    mirror_.erase(it);
  }
  for (size_t i = 0; i < step.truncated.size(); ++i) {
    auto it = mirror_.find(step.truncated[i]);
    if (it == mirror_.end()) continue;  // truncated before it was ever fed
    cache_.truncate(it->second, std::min(step.truncated_lengths[i], cache_.length(it->second)));
  }
  for (const TargetStep::Sequence& s : step.sequences) {
    auto it = mirror_.find(s.seq);
    const bool fresh = it == mirror_.end();
    const auto fail = [&](const std::string& what) {
      return "TargetStep " + std::to_string(step.step) + ": sequence " + std::to_string(s.seq) +
             " " + what + " (the coordinator's cache and this rank's disagree)";
    };
    if (fresh) {
      // Its table from block 0: it may start on cached prefix blocks.
      require(s.table_from == 0, ErrorKind::internal, [&] {
        return fail("is new to this rank but its table starts at block " +
                    std::to_string(s.table_from));
      });
      it = mirror_.emplace(s.seq, cache_.create_sequence()).first;
    }
    const SequenceId local = it->second;
    if (!fresh) {
      require(s.start <= cache_.length(local), ErrorKind::internal, [&] {
        return fail("starts at " + std::to_string(s.start) + " but this rank cached only " +
                    std::to_string(cache_.length(local)) + " positions");
      });
      cache_.truncate(local, s.start);
    }
    const int block = cache_.block_size();
    const auto held = static_cast<int32_t>(cache_.block_table(local).size());
    const int64_t covered = (int64_t{s.table_from} + static_cast<int64_t>(s.table.size())) * block;
    require(s.table_from <= held && covered >= s.start + static_cast<int64_t>(s.tokens.size()),
            ErrorKind::internal, [&] {
              return fail("has a table of " + std::to_string(s.table.size()) +
                          " blocks from block " + std::to_string(s.table_from) + " (this rank holds " +
                          std::to_string(held) + "), which does not cover positions up to " +
                          std::to_string(s.start + static_cast<int64_t>(s.tokens.size())));
            });
    // The coordinator's block numbers, in a cache of the same size; the
    // positions before start hold the K/V this rank (or, for cached prefix
    // blocks, another sequence on this rank) wrote there.
    cache_.adopt_blocks(local, s.table_from, s.table);
    cache_.set_length(local, s.start);
  }
}

void TargetStepRunner::run(TargetStep& step, std::span<const DeviceRows> local_q,
                           TargetResult& result) {
  result = TargetResult{};
  result.step = step.step;
  if (mode_ == CacheMode::mirrored) replay(step);
  if (step.sequences.empty()) return;

  std::vector<SequenceStep> steps;
  steps.reserve(step.sequences.size());
  for (const TargetStep::Sequence& s : step.sequences) {
    const SequenceId seq = mode_ == CacheMode::mirrored ? mirror_.at(s.seq) : s.seq;
    steps.push_back({seq, s.tokens, s.logit_count});
  }
  const auto start = std::chrono::steady_clock::now();
  const float* logits = model_.forward(steps, cache_);
  result.forward_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.communication_seconds = model_.communication_seconds();
  if (logits == nullptr) return;  // a shard other than target rank 0
  const auto verify_start = std::chrono::steady_clock::now();
  verify_blocks(model_.backend(), model_.config().vocab_size, logits, step, local_q,
                q_rows_ ? &*q_rows_ : nullptr, verify_scratch_, result.outcomes);
  score_prompts(model_.backend(), model_.config().vocab_size, logits, step,
                result.prompt_logprobs);
  if (q_rows_) {
    // Rows of draft steps up to the newest this step named are used or
    // belong to blocks that will never be verified.
    uint64_t newest = 0;
    for (const TargetStep::Sequence& s : step.sequences)
      if (s.q_source == QSource::draft_rank) newest = std::max(newest, s.q_step);
    if (newest > 0) q_rows_->drop_through(newest);
  }
  result.verify_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - verify_start).count();
}

}  // namespace tandem
