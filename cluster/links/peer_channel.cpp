#include "cluster/links/peer_channel.h"

#include <chrono>
#include <optional>
#include <sstream>

#include "common/error.h"

namespace tandem {

// Records the wait under way for overdue(), from its start to its end.
class PeerChannel::WaitScope {
 public:
  WaitScope(PeerChannel& channel, int from, const std::string& what, const std::vector<int>& peers)
      : channel_(channel) {
    const auto timeout = std::chrono::duration<double>(channel.layout_.placement.step_timeout_seconds);
    std::lock_guard lock(channel.wait_mutex_);
    channel.wait_ = Wait{from, what, peers,
                         Clock::now() + std::chrono::duration_cast<Clock::duration>(timeout)};
  }
  ~WaitScope() {
    std::lock_guard lock(channel_.wait_mutex_);
    channel_.wait_.reset();
  }
  WaitScope(const WaitScope&) = delete;
  WaitScope& operator=(const WaitScope&) = delete;

 private:
  PeerChannel& channel_;
};

std::string PeerChannel::lost_message(int from, const std::string& what,
                                      const std::vector<int>& peers) const {
  std::ostringstream message;  // << writes 2 s, not 2.000000 s
  message << layout_.describe(from) << " did not " << what << " within "
          << layout_.placement.step_timeout_seconds
          << " s (placement.step_timeout_seconds): it is lost";
  std::string others;
  for (int peer : peers)
    if (peer != from) others += (others.empty() ? "" : ", ") + layout_.describe(peer);
  if (!others.empty()) message << ", or one it waits for is: " << others;
  return message.str();
}

void PeerChannel::throw_lost(int from, const std::string& what,
                             const std::vector<int>& peers) const {
  throw Error(ErrorKind::unavailable, lost_message(from, what, peers));
}

std::string PeerChannel::overdue(double grace_seconds) const {
  std::lock_guard lock(wait_mutex_);
  if (!wait_) return {};
  const auto grace = std::chrono::duration<double>(grace_seconds);
  if (Clock::now() < wait_->deadline + std::chrono::duration_cast<Clock::duration>(grace))
    return {};
  return lost_message(wait_->from, wait_->what, wait_->peers);
}

void PeerChannel::send_command(const Bytes& bytes, int to, const std::string& what) {
  const std::string taking = "take " + what;
  WaitScope scope(*this, to, taking, {});
  if (!world_.send_within(bytes, to, tag_value(Tag::command),
                          layout_.placement.step_timeout_seconds))
    throw_lost(to, taking);
}

Bytes PeerChannel::await(int from, Tag tag, const std::string& what) {
  return await_after_peers(from, tag, what, {});
}

Bytes PeerChannel::await_after_peers(int from, Tag tag, const std::string& what,
                                     const std::vector<int>& peers) {
  WaitScope scope(*this, from, what, peers);
  std::optional<Bytes> bytes =
      world_.receive(from, tag_value(tag), layout_.placement.step_timeout_seconds);
  if (!bytes) throw_lost(from, what, peers);
  return std::move(*bytes);
}

Bytes PeerChannel::await(int from, Tag tag, const std::string& what,
                         const std::function<void()>& while_waiting) {
  WaitScope scope(*this, from, what, {});
  const auto deadline = Clock::now() +
                        std::chrono::duration<double>(layout_.placement.step_timeout_seconds);
  for (;;) {
    while_waiting();
    if (std::optional<Bytes> bytes = world_.receive(from, tag_value(tag), 0.002))
      return std::move(*bytes);
    if (Clock::now() > deadline) throw_lost(from, what);
  }
}

Bytes PeerChannel::wait_forever(int from, Tag tag) {
  std::optional<Bytes> bytes = world_.receive(from, tag_value(tag), -1);
  require(bytes.has_value(), ErrorKind::internal, "a receive without timeout returned nothing");
  return std::move(*bytes);
}

}  // namespace tandem
