#include "workers/speculation/q_rows_inbox.h"

#include <algorithm>
#include <string>

#include "common/error.h"

namespace tandem {

const std::vector<float>& QRowsInbox::rows(uint64_t session, uint64_t step, int V) {
  auto message = held_.find(step);
  while (message == held_.end()) {
    require(newest_ < step, ErrorKind::internal, [&] {
      return "draft step " + std::to_string(step) + " sent no q rows (the draft rank is at step " +
             std::to_string(newest_) + ")";
    });
    require(static_cast<bool>(receive_next_), ErrorKind::internal,
            "a block's q rows are at the draft rank, but this rank cannot receive them");
    deliver(receive_next_());
    message = held_.find(step);
  }
  require(message->second.vocab == V, ErrorKind::internal, [&] {
    return "QRows for vocabulary " + std::to_string(message->second.vocab) + ", target has " +
           std::to_string(V);
  });
  for (const wire::QRows::Entry& entry : message->second.entries)
    if (entry.session == session) return entry.q;
  throw Error(ErrorKind::internal, "no q rows from the draft rank for session " +
                                       std::to_string(session) + " in draft step " +
                                       std::to_string(step));
}

void QRowsInbox::deliver(wire::QRows message) {
  require(message.step > newest_, ErrorKind::internal, [&] {
    return "QRows of draft step " + std::to_string(message.step) + " came after step " +
           std::to_string(newest_);
  });
  newest_ = message.step;
  if (message.step > dropped_through_) held_.emplace(message.step, std::move(message));
}

void QRowsInbox::drop_through(uint64_t step) {
  held_.erase(held_.begin(), held_.upper_bound(step));
  dropped_through_ = std::max(dropped_through_, step);
}

}  // namespace tandem
