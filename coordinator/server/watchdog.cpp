#include "coordinator/server/watchdog.h"

namespace tandem {

Watchdog::Watchdog(std::chrono::milliseconds interval, std::function<std::string()> check,
                   std::function<void(const std::string& reason)> act)
    : interval_(interval), check_(std::move(check)), act_(std::move(act)),
      thread_([this] { run(); }) {}

Watchdog::~Watchdog() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void Watchdog::run() {
  std::unique_lock lock(mutex_);
  while (!wake_.wait_for(lock, interval_, [this] { return stopping_; })) {
    lock.unlock();
    const std::string reason = check_();
    if (!reason.empty()) {
      act_(reason);
      return;
    }
    lock.lock();
  }
}

}  // namespace tandem
