#include "workers/speculation/target_kv.h"

#include <algorithm>
#include <string>
#include <utility>

#include "common/error.h"

namespace tandem {

void TargetKv::release(SequenceId seq) {
  cache_.release(seq);
  sent_.erase(seq);
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
  const int block = cache_.block_size();
  for (TargetStep::Sequence& s : step.sequences) {
    const std::span<const int32_t> blocks = cache_.block_table(s.seq);
    const bool first = sent_.insert(s.seq).second;
    const size_t from = first ? 0 : static_cast<size_t>(s.start / block);
    const size_t end = static_cast<size_t>(
        (s.start + static_cast<int>(s.tokens.size()) + block - 1) / block);
    require(end <= blocks.size(), ErrorKind::internal, [&] {
      return "TargetStep " + std::to_string(step.step) + ": sequence " + std::to_string(s.seq) +
             " feeds up to position " + std::to_string(s.start + s.tokens.size()) + " but holds " +
             std::to_string(blocks.size()) + " blocks";
    });
    s.table_from = static_cast<int32_t>(from);
    s.table.assign(blocks.begin() + static_cast<std::ptrdiff_t>(from),
                   blocks.begin() + static_cast<std::ptrdiff_t>(std::max(from, end)));
  }
}

}  // namespace tandem
