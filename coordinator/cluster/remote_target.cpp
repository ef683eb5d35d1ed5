#include "coordinator/cluster/remote_target.h"

#include "common/error.h"

namespace tandem {

void RemoteTarget::run(wire::TargetStep& step, wire::TargetResult& result) {
  require(lost_.empty(), ErrorKind::unavailable, [&] { return lost_; });
  const std::vector<int>& ranks = channel_.layout().placement.target_ranks;
  const Bytes bytes = wire::encode(step);
  for (int rank : ranks) channel_.send(bytes, rank, kCommandTag);
  const std::string name = "target step " + std::to_string(step.step);
  try {
    // Acknowledgements first, in TP order: a rank that never received the
    // step is the one to blame, not rank 0 waiting for it in an all-reduce.
    for (int rank : ranks) channel_.await(rank, kAckTag, "acknowledge " + name);
    result = wire::decode_target_result(
        channel_.await(ranks.front(), wire::tag_of(wire::MessageType::target_result),
                       "return the result of " + name));
  } catch (const Error& error) {
    if (error.kind() == ErrorKind::unavailable) lost_ = error.what();
    throw;
  }
  require(result.step == step.step, ErrorKind::internal, [&] {
    return "target rank 0 answered step " + std::to_string(result.step) + " to " + name;
  });
}

}  // namespace tandem
