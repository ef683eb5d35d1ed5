#include "cluster/proxies/remote_target.h"

#include "common/error.h"

namespace tandem {

void RemoteTarget::run(wire::TargetStep& step, std::span<const DeviceRows> local_q,
                       wire::TargetResult& result) {
  require(lost_.empty(), ErrorKind::unavailable, [&] { return lost_; });
  const std::vector<int>& ranks = channel_.layout().placement.target_ranks;
  send_q_rows(step, local_q);
  const Bytes bytes = wire::encode(step);
  const std::string name = "target step " + std::to_string(step.step);
  try {
    for (int rank : ranks) channel_.send_command(bytes, rank, name);
    // Acknowledgements first, in TP order: a rank that never received the
    // step is the one to blame, not rank 0 waiting for it in an all-reduce.
    for (int rank : ranks) channel_.await(rank, Tag::ack, "acknowledge " + name);
    // Every shard took the step; rank 0's result then waits on the others'
    // all-reduces, so a shard lost mid-step is named beside it.
    result = wire::decode_target_result(channel_.await_after_peers(
        ranks.front(), Tag::target_result, "return the result of " + name, ranks));
  } catch (const Error& error) {
    if (error.kind() == ErrorKind::unavailable) lost_ = error.what();
    throw;
  }
  require(result.step == step.step, ErrorKind::internal, [&] {
    return "target rank 0 answered step " + std::to_string(result.step) + " to " + name;
  });
}

void RemoteTarget::send_q_rows(wire::TargetStep& step, std::span<const DeviceRows> local_q) {
  wire::QRows message;
  message.step = step.step;  // increasing, as the inbox wants
  message.vocab = vocab_;
  std::vector<DeviceRows> rows;
  for (size_t i = 0; i < step.sequences.size(); ++i) {
    wire::TargetStep::Sequence& s = step.sequences[i];
    if (s.q_source != wire::QSource::local) continue;
    require(i < local_q.size(), ErrorKind::internal, "a block's local q rows did not come");
    s.q_source = wire::QSource::draft_rank;
    s.q_step = step.step;
    s.q_first_row = 0;
    message.entries.push_back({s.session, s.gamma});
    rows.push_back(local_q[i]);
  }
  if (message.entries.empty()) return;
  QRowsLink* link = channel_.q_rows_link();
  require(link != nullptr, ErrorKind::internal,
          "the drafter in the coordinator has q rows for a remote target, but no q rows link");
  // Before the step: target rank 0 takes rows while it waits for a command.
  link->send(message, rows);
}

}  // namespace tandem
