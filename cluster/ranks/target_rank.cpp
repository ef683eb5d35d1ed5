#include "cluster/ranks/target_rank.h"

#include <iostream>
#include <optional>

#include "cluster/wire/messages.h"
#include "common/error.h"
#include "common/log_line.h"
#include "workers/speculation/target_step_runner.h"

namespace tandem {

namespace {
using wire::MessageType;
}  // namespace

int serve_target_rank(PeerChannel& channel, LlamaModel& shard, PagedKvCache& cache) {
  const ClusterLayout& layout = channel.layout();
  const int coordinator = layout.placement.coordinator_rank;
  // Target rank 0 of a job whose draft runs in another process holds the
  // link its q rows come over (the other shards, and other jobs, hold none).
  QRowsLink* q_link = channel.q_rows_link();
  QRowsSource next_rows;
  if (q_link != nullptr) {
    q_link->receive_into(shard.backend());
    next_rows = [q_link] {
      std::optional<ArrivedQRows> rows = q_link->receive(-1);
      require(rows.has_value(), ErrorKind::internal,
              "the draft rank ended its q rows while a step still needed some");
      return std::move(*rows);
    };
  }
  TargetStepRunner runner(shard, cache, TargetStepRunner::CacheMode::mirrored,
                          std::move(next_rows));
  // Rows are taken as they come while this rank waits for its next step:
  // with pipelined drafting the draft rank sends rows ahead of need (and
  // some never needed), and its send waits until they are taken, which
  // would stall the draft rank.
  auto next_command = [&]() -> Bytes {
    if (q_link == nullptr) return channel.wait_forever(coordinator, Tag::command);
    for (;;) {
      while (std::optional<ArrivedQRows> rows = q_link->receive(0))
        runner.deliver_q_rows(std::move(*rows));
      if (std::optional<Bytes> command =
              channel.world().receive(coordinator, tag_value(Tag::command), 0.02))
        return std::move(*command);
    }
  };
  for (;;) {
    const Bytes bytes = next_command();
    if (wire::peek_type(bytes) == MessageType::shutdown) {
      if (q_link != nullptr &&
          !q_link->drop_until_end(layout.placement.step_timeout_seconds))
        log_line(std::cerr, layout.describe_self(), ": the draft rank did not end its q rows");
      return wire::decode_shutdown(bytes).exit_code;
    }
    wire::TargetStep step = wire::decode_target_step(bytes);
    wire::TargetResult ack;
    ack.step = step.step;
    channel.send(wire::encode(ack), coordinator, Tag::ack);
    wire::TargetResult result;
    runner.run(step, result);
    if (layout.tp_rank == 0)
      channel.send(wire::encode(result), coordinator, Tag::target_result);
  }
}

}  // namespace tandem
