// Watchdog: a thread that asks check() every `interval`; the first time it
// answers with a reason, act(reason) runs once, on the watchdog's thread,
// and the watchdog stops asking. The destructor stops it (and waits for an
// act() under way).
//
// The server keeps one while another rank can be lost: a thread stuck
// inside MPI cannot time out by itself, so another thread must notice it
// and answer the requests in flight (ServerApp).
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace tandem {

class Watchdog {
 public:
  Watchdog(std::chrono::milliseconds interval, std::function<std::string()> check,
           std::function<void(const std::string& reason)> act);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

 private:
  void run();

  std::chrono::milliseconds interval_;
  std::function<std::string()> check_;
  std::function<void(const std::string&)> act_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;  // last: starts once the members above exist
};

}  // namespace tandem
