#include "cluster/ranks/worker_rank.h"

#include <unistd.h>

#include <chrono>
#include <fstream>

#include "cluster/ranks/draft_rank.h"
#include "cluster/ranks/target_rank.h"
#include "cluster/wire/messages.h"

namespace tandem {
namespace {

int64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * sysconf(_SC_PAGESIZE);
}

}  // namespace

int serve_worker(PeerChannel& channel, Communicator* tp_group, const WorkerLoader& load) {
  const ClusterLayout& layout = channel.layout();
  const auto start = std::chrono::steady_clock::now();
  WorkerModel loaded = load(layout, tp_group);

  wire::WorkerReady ready;
  ready.rank = layout.rank;
  ready.bytes_read = loaded.bytes_read;
  ready.resident_bytes = resident_bytes();
  ready.load_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  channel.send(wire::encode(ready), layout.placement.coordinator_rank, Tag::worker_ready);
  return layout.role == Role::draft ? serve_draft_rank(channel, *loaded.model, *loaded.cache)
                                    : serve_target_rank(channel, *loaded.model, *loaded.cache);
}

}  // namespace tandem
