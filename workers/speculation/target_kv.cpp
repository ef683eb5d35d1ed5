#include "workers/speculation/target_kv.h"

#include <utility>

namespace tandem {

void TargetKv::release(SequenceId seq) {
  cache_.release(seq);
  released_.push_back(seq);
}

void TargetKv::truncate(SequenceId seq, int length) {
  if (length >= cache_.length(seq)) return;
  cache_.truncate(seq, length);  // may keep less: a shared block is kept whole or not at all
  truncated_.push_back(seq);
  truncated_lengths_.push_back(cache_.length(seq));
}

void TargetKv::stamp(TargetStep& step) {
  step.step = ++steps_;
  step.released = std::move(released_);
  released_.clear();
  step.truncated = std::move(truncated_);
  truncated_.clear();
  step.truncated_lengths = std::move(truncated_lengths_);
  truncated_lengths_.clear();
}

}  // namespace tandem
