#include "cluster/links/peer_channel.h"

#include <chrono>
#include <optional>
#include <sstream>

#include "common/error.h"

namespace tandem {

void PeerChannel::throw_lost(int from, const std::string& what,
                             const std::vector<int>& peers) const {
  std::ostringstream message;  // << writes 2 s, not 2.000000 s
  message << layout_.describe(from) << " did not " << what << " within "
          << layout_.placement.step_timeout_seconds
          << " s (placement.step_timeout_seconds): it is lost";
  std::string others;
  for (int peer : peers)
    if (peer != from) others += (others.empty() ? "" : ", ") + layout_.describe(peer);
  if (!others.empty()) message << ", or one it waits for is: " << others;
  throw Error(ErrorKind::unavailable, message.str());
}

Bytes PeerChannel::await(int from, Tag tag, const std::string& what) {
  return await_after_peers(from, tag, what, {});
}

Bytes PeerChannel::await_after_peers(int from, Tag tag, const std::string& what,
                                     const std::vector<int>& peers) {
  std::optional<Bytes> bytes =
      world_.receive(from, tag_value(tag), layout_.placement.step_timeout_seconds);
  if (!bytes) throw_lost(from, what, peers);
  return std::move(*bytes);
}

Bytes PeerChannel::await(int from, Tag tag, const std::string& what,
                         const std::function<void()>& while_waiting) {
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration<double>(layout_.placement.step_timeout_seconds);
  for (;;) {
    while_waiting();
    if (std::optional<Bytes> bytes = world_.receive(from, tag_value(tag), 0.002))
      return std::move(*bytes);
    if (std::chrono::steady_clock::now() > deadline) throw_lost(from, what);
  }
}

Bytes PeerChannel::wait_forever(int from, Tag tag) {
  std::optional<Bytes> bytes = world_.receive(from, tag_value(tag), -1);
  require(bytes.has_value(), ErrorKind::internal, "a receive without timeout returned nothing");
  return std::move(*bytes);
}

}  // namespace tandem
