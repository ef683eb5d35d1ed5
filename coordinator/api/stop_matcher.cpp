#include "coordinator/api/stop_matcher.h"

#include <algorithm>
#include <utility>

#include "common/error.h"

namespace tandem::api {

StopMatcher::StopMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {
  for (const std::string& stop : stops_) {
    require(!stop.empty(), ErrorKind::invalid_argument,
            "stop sequences must not be empty strings; drop the empty one");
  }
}

StopMatcher::Result StopMatcher::push(std::string_view text_delta) {
  if (stopped_) return {"", true};
  held_.append(text_delta);

  // The match that completes first. Everything emitted so far is known not to
  // overlap a match (see longest_partial_stop), so only held_ is searched.
  std::size_t best_end = std::string::npos;
  std::size_t best_start = 0;
  for (const std::string& stop : stops_) {
    const std::size_t start = held_.find(stop);
    if (start == std::string::npos) continue;
    const std::size_t end = start + stop.size();
    if (end < best_end || (end == best_end && start < best_start)) {
      best_end = end;
      best_start = start;
    }
  }
  if (best_end != std::string::npos) {
    stopped_ = true;
    std::string emit = held_.substr(0, best_start);
    held_.clear();
    return {std::move(emit), true};
  }

  const std::size_t keep = longest_partial_stop();
  std::string emit = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return {std::move(emit), false};
}

std::string StopMatcher::flush() {
  if (stopped_) return "";
  return std::exchange(held_, std::string());
}

std::size_t StopMatcher::longest_partial_stop() const {
  // Any match still to come starts inside this suffix: a start earlier than
  // it would make a longer suffix a prefix of that stop.
  std::size_t longest = 0;
  for (const std::string& stop : stops_) {
    const std::size_t most = std::min(held_.size(), stop.size() - 1);
    for (std::size_t length = most; length > longest; --length) {
      if (std::string_view(held_).substr(held_.size() - length) ==
          std::string_view(stop).substr(0, length)) {
        longest = length;
        break;
      }
    }
  }
  return longest;
}

}  // namespace tandem::api
