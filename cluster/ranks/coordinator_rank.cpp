#include "cluster/ranks/coordinator_rank.h"

#include "cluster/wire/messages.h"
#include "common/error.h"
#include "common/log_line.h"

namespace tandem {

void wait_for_workers(PeerChannel& channel, std::ostream& log) {
  const ClusterLayout& layout = channel.layout();
  for (int rank = 0; rank < layout.world_size; ++rank) {
    if (rank == layout.rank) continue;
    const wire::WorkerReady ready =
        wire::decode_worker_ready(channel.wait_forever(rank, Tag::worker_ready));
    log_line(log, layout.describe(rank), " ready in ", ready.load_seconds, " s: read ",
             ready.bytes_read / 1e6, " MB of checkpoint, resident ", ready.resident_bytes / 1e6,
             " MB");
  }
}

std::string stop_workers(PeerChannel& channel) {
  // A drafter here with the target on other ranks: its q rows end first.
  if (QRowsLink* link = channel.q_rows_link(); link != nullptr && link->sends()) link->send_end();
  wire::Shutdown message;
  message.reason = "the coordinator is shutting down";
  const Bytes bytes = wire::encode(message);
  const ClusterLayout& layout = channel.layout();
  std::string lost;
  for (int rank = 0; rank < layout.world_size; ++rank) {
    if (rank == layout.rank) continue;
    try {
      channel.send_command(bytes, rank, "its Shutdown");
    } catch (const Error& error) {
      if (error.kind() != ErrorKind::unavailable) throw;
      if (lost.empty()) lost = error.what();  // the others still get theirs
    }
  }
  return lost;
}

bool drain_q_rows(PeerChannel& channel) {
  QRowsLink* link = channel.q_rows_link();
  if (link == nullptr || link->sends()) return true;
  return link->drop_until_end(channel.layout().placement.step_timeout_seconds);
}

}  // namespace tandem
