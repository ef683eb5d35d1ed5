#include "coordinator/cluster/remote_drafter.h"

#include <chrono>

#include "common/error.h"

namespace tandem {

void RemoteDrafter::propose(std::span<const DraftRequest> requests,
                            std::vector<DraftProposal>& proposals) {
  const auto start = std::chrono::steady_clock::now();
  wire::DraftStep step;
  step.step = ++steps_;
  step.released = std::move(released_);
  released_.clear();
  for (const DraftRequest& request : requests) {
    int32_t& held = held_[request.session];
    wire::DraftStep::Entry entry;
    entry.session = request.session;
    entry.known = held;
    entry.new_tokens.assign(request.tokens.begin() + held, request.tokens.end());
    entry.gamma = request.gamma;
    entry.sampling = request.sampling;
    held = static_cast<int32_t>(request.tokens.size());
    step.entries.push_back(std::move(entry));
  }
  const int rank = channel_.layout().placement.draft_rank;
  channel_.send(wire::encode(step), rank, kCommandTag);
  wire::DraftReply reply = wire::decode_draft_reply(channel_.await(
      rank, wire::tag_of(wire::MessageType::draft_reply),
      "return draft step " + std::to_string(step.step)));
  require(reply.step == step.step && reply.tokens.size() == requests.size(), ErrorKind::internal,
          [&] {
            return "the draft rank answered draft step " + std::to_string(step.step) +
                   " with step " + std::to_string(reply.step) + " and " +
                   std::to_string(reply.tokens.size()) + " proposals";
          });
  proposals.assign(requests.size(), DraftProposal{});
  for (size_t i = 0; i < requests.size(); ++i) {
    proposals[i].tokens = std::move(reply.tokens[i]);
    proposals[i].q_at_draft_rank =
        !requests[i].sampling.greedy() && !proposals[i].tokens.empty();
  }
  last_seconds_ =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void RemoteDrafter::release(SessionKey session) {
  if (held_.erase(session) > 0) released_.push_back(session);
}

}  // namespace tandem
