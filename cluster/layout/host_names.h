// The host each rank of a job runs on, gathered once when the job starts,
// so that a message naming a rank (a lost one above all) also says which
// machine to look at: "rank 3 (target shard 1 of 2, on host node-4)".
#pragma once

#include <string>
#include <vector>

#include "transport/communicator.h"

namespace tandem {

// This machine's name as the kernel reports it (gethostname; in a
// container or a network namespace with its own UTS namespace, that one's).
std::string this_host_name();

// Every rank's `mine`, in rank order, on every rank. Collective: every
// rank of `world` calls it, in the same order as its other collectives.
std::vector<std::string> all_gather_strings(Communicator& world, const std::string& mine);

// all_gather_strings of this_host_name().
inline std::vector<std::string> gather_host_names(Communicator& world) {
  return all_gather_strings(world, this_host_name());
}

}  // namespace tandem
