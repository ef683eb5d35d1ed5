#include "coordinator/cluster/peer_channel.h"

#include "common/error.h"

namespace tandem {

namespace {
std::string seconds_text(double seconds) {
  std::string text = std::to_string(seconds);
  text.erase(text.find_last_not_of('0') + 1);
  if (!text.empty() && text.back() == '.') text.pop_back();
  return text;
}
}  // namespace

Bytes PeerChannel::await(int from, int tag, const std::string& what) {
  const double timeout = layout_.placement.step_timeout_seconds;
  std::optional<Bytes> bytes = world_.receive(from, tag, timeout);
  if (!bytes) {
    throw Error(ErrorKind::unavailable, layout_.describe(from) + " did not " + what + " within " +
                                            seconds_text(timeout) +
                                            " s (placement.step_timeout_seconds): it is lost");
  }
  return std::move(*bytes);
}

Bytes PeerChannel::wait_forever(int from, int tag) {
  std::optional<Bytes> bytes = world_.receive(from, tag, -1);
  require(bytes.has_value(), ErrorKind::internal, "a receive without timeout returned nothing");
  return std::move(*bytes);
}

}  // namespace tandem
