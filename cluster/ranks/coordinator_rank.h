// The coordinator's side of a job's start and end, apart from the engine's
// steps (those go through the proxies, cluster/proxies/):
// - wait_for_workers(): every other rank's WorkerReady, logged;
// - stop_workers(): the end of this process's q rows (when it drafts for a
//   remote target), then Shutdown to every other rank that takes it;
// - drain_q_rows(): after Shutdown, the draft rank's rows no step needed.
#pragma once

#include <ostream>
#include <string>

#include "cluster/links/peer_channel.h"

namespace tandem {

// Loading takes as long as it takes; a rank that fails to load ends the job.
void wait_for_workers(PeerChannel& channel, std::ostream& log);

// Every rank is sent its Shutdown, each given up on after the step timeout
// (a rank that is gone); returns why one was given up on, empty when none.
std::string stop_workers(PeerChannel& channel);

// Where this process verifies the draft rank's blocks (the target here, the
// draft on a rank of its own), the draft rank may still be sending rows no
// step needed; it cannot take its Shutdown (and the job cannot end) until
// they are taken. Takes them until the stream's end; false when it did not
// come within the step timeout. True at once where no rows come here.
bool drain_q_rows(PeerChannel& channel);

}  // namespace tandem
