// AcceptBackoff: how long the accept loop waits after accept() fails.
//
// accept() fails when the process or the system is out of something (EMFILE,
// ENFILE, ENOBUFS, ENOMEM). The listening socket stays readable meanwhile, so
// retrying at once spins a core and starves the connections that could free
// the resource. The wait doubles from 10 ms up to 1 s and starts over once an
// accept succeeds. Only the first error of a run is worth a log line.
#pragma once

#include <algorithm>
#include <chrono>

namespace tandem::http {

class AcceptBackoff {
 public:
  static constexpr std::chrono::milliseconds kFirstWait{10};
  static constexpr std::chrono::milliseconds kLongestWait{1000};

  // One more failure: the wait before the next try.
  std::chrono::milliseconds failed() {
    ++failures_;
    const std::chrono::milliseconds wait = next_;
    next_ = std::min(next_ * 2, kLongestWait);
    return wait;
  }
  // An accept succeeded: how many failed in a row before it (0: none).
  int succeeded() {
    const int failures = failures_;
    failures_ = 0;
    next_ = kFirstWait;
    return failures;
  }
  // Whether the failure just counted opened a run (log it; skip the rest).
  bool first_of_run() const { return failures_ == 1; }

 private:
  int failures_ = 0;
  std::chrono::milliseconds next_ = kFirstWait;
};

}  // namespace tandem::http
