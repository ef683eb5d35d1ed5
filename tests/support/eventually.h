// eventually(): for a test that waits on another thread or process (a log
// line written after the response, a metric, KV blocks freed by a
// cancelled request), polls a condition until it holds or a limit passes.
#pragma once

#include <chrono>
#include <thread>

namespace tandem::test_support {

// True as soon as done() holds; false if it still does not after `limit`
// (checked every 10 ms).
template <class Condition>
bool eventually(Condition done, std::chrono::milliseconds limit = std::chrono::seconds(10)) {
  const auto give_up = std::chrono::steady_clock::now() + limit;
  for (;;) {
    if (done()) return true;
    if (std::chrono::steady_clock::now() >= give_up) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace tandem::test_support
