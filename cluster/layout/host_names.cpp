#include "cluster/layout/host_names.h"

#include <limits.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tandem {

std::string this_host_name() {
  char name[HOST_NAME_MAX + 1] = {};
  if (gethostname(name, sizeof(name) - 1) != 0)
    return "unknown (gethostname: " + std::string(std::strerror(errno)) + ")";
  return name;
}

std::vector<std::string> all_gather_strings(Communicator& world, const std::string& mine) {
  // One broadcast per rank: the job gathers a few dozen bytes once, at
  // its start, so the simplest collective that carries bytes is enough.
  std::vector<std::string> all;
  all.reserve(static_cast<size_t>(world.size()));
  for (int root = 0; root < world.size(); ++root) {
    Bytes bytes;
    if (root == world.rank()) {
      const auto* first = reinterpret_cast<const std::byte*>(mine.data());
      bytes.assign(first, first + mine.size());
    }
    world.broadcast(bytes, root);
    all.emplace_back(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  }
  return all;
}

}  // namespace tandem
