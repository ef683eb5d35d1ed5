#include "coordinator/engine_loop/completion_stream.h"

namespace tandem {

void CompletionStream::publish(std::string text) {
  if (text.empty()) return;
  {
    std::lock_guard lock(mutex_);
    pending_text_ += text;
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
  if (end_) {
    drained.end = std::move(end_);
    end_.reset();
    end_taken_ = true;
  }
  return drained;
}

}  // namespace tandem
