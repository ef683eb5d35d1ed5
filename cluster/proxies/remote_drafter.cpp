#include "cluster/proxies/remote_drafter.h"

#include <algorithm>
#include <chrono>

#include "common/error.h"

namespace tandem {

void RemoteDrafter::propose(std::span<const DraftRequest> requests,
                            std::vector<DraftProposal>& proposals) {
  const auto start = std::chrono::steady_clock::now();
  begin_propose(requests);
  finish_propose(proposals);
  // Drafting in lockstep: what the engine waited for, messages included.
  last_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void RemoteDrafter::begin_propose(std::span<const DraftRequest> requests) {
  wire::DraftStep step;
  step.step = ++steps_;
  step.released = std::move(released_);
  released_.clear();
  in_flight_sampled_.clear();
  for (const DraftRequest& request : requests) {
    std::vector<int32_t>& held = held_[request.session];
    // What the draft rank holds stands as far as it agrees with the request.
    const auto agree = std::mismatch(held.begin(), held.end(), request.tokens.begin(),
                                     request.tokens.end());
    wire::DraftStep::Entry entry;
    entry.session = request.session;
    entry.known = static_cast<int32_t>(agree.first - held.begin());
    entry.new_tokens.assign(agree.second, request.tokens.end());
    entry.gamma = request.gamma;
    entry.sampling = request.sampling;
    if (request.processing) entry.processing = {*request.processing};
    entry.cache_salt = request.cache_salt;
    held.assign(request.tokens.begin(), request.tokens.end());
    step.entries.push_back(std::move(entry));
    in_flight_sampled_.push_back(!request.sampling.greedy());
  }
  channel_.send_command(wire::encode(step), channel_.layout().placement.draft_rank,
                        "draft step " + std::to_string(step.step));
}

void RemoteDrafter::finish_propose(std::vector<DraftProposal>& proposals) {
  const uint64_t step = steps_;
  const int rank = channel_.layout().placement.draft_rank;
  const std::string what = "return draft step " + std::to_string(step);
  const Bytes bytes = take_q_rows_ ? channel_.await(rank, Tag::draft_reply, what, take_q_rows_)
                                   : channel_.await(rank, Tag::draft_reply, what);
  wire::DraftReply reply = wire::decode_draft_reply(bytes);
  require(reply.step == step && reply.tokens.size() == in_flight_sampled_.size(),
          ErrorKind::internal, [&] {
            return "the draft rank answered draft step " + std::to_string(step) + " with step " +
                   std::to_string(reply.step) + " and " + std::to_string(reply.tokens.size()) +
                   " proposals";
          });
  proposals.assign(reply.tokens.size(), DraftProposal{});
  for (size_t i = 0; i < reply.tokens.size(); ++i) {
    proposals[i].tokens = std::move(reply.tokens[i]);
    proposals[i].fault = reply.faults[i];  // as many as tokens (checked when decoded)
    proposals[i].q_at_draft_rank = in_flight_sampled_[i] && !proposals[i].tokens.empty();
    if (proposals[i].q_at_draft_rank) proposals[i].q_step = step;
  }
  // Overlapped with a target pass, the wall time since begin is mostly the
  // target's: the draft rank's own time is the drafting cost.
  last_seconds_ = reply.seconds;
  prefix_counters_ = {reply.prefix_queries, reply.prefix_hits};
}

void RemoteDrafter::release(SessionKey session) {
  if (held_.erase(session) > 0) released_.push_back(session);
}

}  // namespace tandem
