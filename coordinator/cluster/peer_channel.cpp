#include "coordinator/cluster/peer_channel.h"

#include <sstream>

#include "common/error.h"

namespace tandem {

Bytes PeerChannel::await(int from, int tag, const std::string& what) {
  const double timeout = layout_.placement.step_timeout_seconds;
  std::optional<Bytes> bytes = world_.receive(from, tag, timeout);
  if (!bytes) {
    std::ostringstream message;  // << writes 2 s, not 2.000000 s
    message << layout_.describe(from) << " did not " << what << " within " << timeout
            << " s (placement.step_timeout_seconds): it is lost";
    throw Error(ErrorKind::unavailable, message.str());
  }
  return std::move(*bytes);
}

Bytes PeerChannel::wait_forever(int from, int tag) {
  std::optional<Bytes> bytes = world_.receive(from, tag, -1);
  require(bytes.has_value(), ErrorKind::internal, "a receive without timeout returned nothing");
  return std::move(*bytes);
}

}  // namespace tandem
