#include "coordinator/engine_loop/completion_stream.h"

#include <iterator>

namespace tandem {

void CompletionStream::publish(std::string text, std::vector<api::LogprobEntry> logprobs) {
  if (text.empty() && logprobs.empty()) return;
  {
    std::lock_guard lock(mutex_);
    pending_text_ += text;
    pending_logprobs_.insert(pending_logprobs_.end(), std::make_move_iterator(logprobs.begin()),
                             std::make_move_iterator(logprobs.end()));
  }
  wake_();
}

void CompletionStream::finish(CompletionEnd end) {
  {
    std::lock_guard lock(mutex_);
    if (end_ || end_taken_) return;  // one end per stream
    end_ = std::move(end);
  }
  wake_();
}

CompletionStream::Drained CompletionStream::drain() {
  std::lock_guard lock(mutex_);
  Drained drained;
  drained.text = std::move(pending_text_);
  pending_text_.clear();
  drained.logprobs = std::move(pending_logprobs_);
  pending_logprobs_.clear();
  if (end_) {
    drained.end = std::move(end_);
    end_.reset();
    end_taken_ = true;
  }
  return drained;
}

}  // namespace tandem
