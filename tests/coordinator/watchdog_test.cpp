// Watchdog (coordinator/server/watchdog.h): check() is asked every
// interval until it gives a reason; act() then runs once with it, and
// check() is not asked again. Destroying a watchdog that never fired stops
// it at once, not after an interval.
#include "coordinator/server/watchdog.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>

namespace tandem {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

TEST(Watchdog, ActsOnceWithTheFirstReasonAndStopsAsking) {
  std::atomic<int> checks{0};
  std::atomic<int> acts{0};
  std::mutex mutex;
  std::string reason;
  Watchdog watchdog(
      1ms, [&] { return ++checks >= 3 ? "reason " + std::to_string(checks.load()) : std::string(); },
      [&](const std::string& why) {
        std::lock_guard lock(mutex);
        reason = why;
        ++acts;
      });
  const auto give_up = Clock::now() + 30s;
  while (acts.load() == 0 && Clock::now() < give_up) std::this_thread::sleep_for(1ms);
  std::this_thread::sleep_for(50ms);  // 50 more intervals: no more checks, no more acts
  EXPECT_EQ(acts.load(), 1);
  EXPECT_EQ(checks.load(), 3);
  std::lock_guard lock(mutex);
  EXPECT_EQ(reason, "reason 3");
}

TEST(Watchdog, DestroyingOneThatNeverFiredStopsItAtOnce) {
  std::atomic<int> checks{0};
  const auto start = Clock::now();
  {
    Watchdog watchdog(
        1h, [&] { return ++checks, std::string(); }, [](const std::string&) { FAIL(); });
  }
  EXPECT_LT(Clock::now() - start, 10s);
  EXPECT_EQ(checks.load(), 0);  // an hour's interval never came
}

}  // namespace
}  // namespace tandem
