#include "workers/speculation/q_rows_inbox.h"

#include <algorithm>
#include <string>

#include "common/error.h"

namespace tandem {

DeviceRows QRowsInbox::rows(uint64_t session, uint64_t step, int V) {
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
  const QRows& header = message->second.header;
  require(header.vocab == V, ErrorKind::internal, [&] {
    return "QRows for vocabulary " + std::to_string(header.vocab) + ", target has " +
           std::to_string(V);
  });
  size_t at = 0;
  for (const QRows::Entry& entry : header.entries) {
    const size_t count = static_cast<size_t>(entry.rows) * static_cast<size_t>(V);
    if (entry.session == session) return message->second.rows.slice(at, count);
    at += count;
  }
  throw Error(ErrorKind::internal, "no q rows from the draft rank for session " +
                                       std::to_string(session) + " in draft step " +
                                       std::to_string(step));
}

void QRowsInbox::deliver(ArrivedQRows message) {
  const uint64_t step = message.header.step;
  require(step > newest_, ErrorKind::internal, [&] {
    return "QRows of draft step " + std::to_string(step) + " came after step " +
           std::to_string(newest_);
  });
  size_t floats = 0;
  for (const QRows::Entry& entry : message.header.entries)
    floats += static_cast<size_t>(entry.rows) * static_cast<size_t>(message.header.vocab);
  require(floats == message.rows.size(), ErrorKind::internal, [&] {
    return "QRows of draft step " + std::to_string(step) + " names " + std::to_string(floats) +
           " floats of rows, " + std::to_string(message.rows.size()) + " came";
  });
  newest_ = step;
  if (step > dropped_through_) held_.emplace(step, std::move(message));
}

void QRowsInbox::drop_through(uint64_t step) {
  held_.erase(held_.begin(), held_.upper_bound(step));
  dropped_through_ = std::max(dropped_through_, step);
}

}  // namespace tandem
