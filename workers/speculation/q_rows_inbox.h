// QRowsInbox: the q rows the draft rank sends to target rank 0, kept by
// draft step (in target rank 0's backend memory, where the q link put
// them) until a target step has used them or passed them by.
//
// The draft rank sends one QRows message per draft step that drafted for
// sampled sessions, in draft-step order. With pipelined drafting not every
// draft step is verified: a block drafted ahead behind a wrong guess, or for
// a session that ended meanwhile, is dropped by the coordinator, and its
// rows must not be mistaken for a later step's. So a TargetStep names the
// draft step of each block's rows (TargetStep::Sequence::q_step), the inbox
// receives messages in order until that step's has come, and after each
// target step forgets every message up to the newest step it named.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <vector>

#include "kernels/device_rows.h"
#include "workers/speculation/target_step.h"

namespace tandem {

// One draft step's q rows as they arrived: which sessions' (the QRows
// message), and their rows side by side in entry order.
struct ArrivedQRows {
  QRows header;
  DeviceRows rows;  // Σ entries' rows × vocab floats
};

// Waits for the next QRows message from the draft rank, and its rows.
using QRowsSource = std::function<ArrivedQRows()>;

class QRowsInbox {
 public:
  explicit QRowsInbox(QRowsSource receive_next) : receive_next_(std::move(receive_next)) {}

  // The (γ, V) rows of `session` from draft step `step`. Error(internal)
  // when the stream has passed that step without it, or the message lacks
  // the session, or its vocabulary is not V.
  DeviceRows rows(uint64_t session, uint64_t step, int V);
  // A message that arrived while no step asked for it (target rank 0 takes
  // them between steps, so the draft rank's sends never wait on it).
  // Error(internal) when its rows do not add up to its entries.
  void deliver(ArrivedQRows message);
  // A target step is done; it named draft steps up to `step`: those
  // messages (used, or left by blocks that were never verified) go.
  void drop_through(uint64_t step);
  size_t held() const { return held_.size(); }

 private:
  QRowsSource receive_next_;
  std::map<uint64_t, ArrivedQRows> held_;  // by draft step
  uint64_t newest_ = 0;                   // the newest step received
  // Every step up to this one was named by a target step: its message, if
  // it comes late, is not needed.
  uint64_t dropped_through_ = 0;
};

}  // namespace tandem
