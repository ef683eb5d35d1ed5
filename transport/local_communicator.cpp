// LocalCommunicator (see local_communicator.h).
#include "transport/local_communicator.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "common/error.h"

namespace tandem {

namespace {

// Rank 0 is the only rank; any other is a bug in the caller.
void require_rank_zero(int rank, const char* operation) {
  require(rank == 0, ErrorKind::internal, [&] {
    return std::string("LocalCommunicator::") + operation + ": rank " + std::to_string(rank) +
           " does not exist in a communicator of size 1";
  });
}

void copy_own_share(std::span<const float> mine, std::span<float> all, const char* operation) {
  require(all.size() == mine.size(), ErrorKind::internal, [&] {
    return std::string("LocalCommunicator::") + operation + ": output holds " +
           std::to_string(all.size()) + " floats, expected " + std::to_string(mine.size());
  });
  std::copy(mine.begin(), mine.end(), all.begin());
}

}  // namespace

void LocalCommunicator::all_reduce_sum(std::span<float>) {
  // The sum over one rank is its own data.
}

void LocalCommunicator::all_gather(std::span<const float> mine, std::span<float> all) {
  copy_own_share(mine, all, "all_gather");
}

void LocalCommunicator::gather(std::span<const float> mine, std::span<float> all, int root) {
  require_rank_zero(root, "gather");
  copy_own_share(mine, all, "gather");
}

void LocalCommunicator::broadcast(Bytes&, int root) { require_rank_zero(root, "broadcast"); }

void LocalCommunicator::send(std::span<const std::byte> bytes, int to, int tag) {
  require_rank_zero(to, "send");
  queues_[tag].emplace_back(bytes.begin(), bytes.end());
}

std::optional<Bytes> LocalCommunicator::receive(int from, int tag, double) {
  require_rank_zero(from, "receive");
  auto queue = queues_.find(tag);
  if (queue == queues_.end() || queue->second.empty()) return std::nullopt;
  Bytes message = std::move(queue->second.front());
  queue->second.pop_front();
  return message;
}

std::unique_ptr<Communicator> LocalCommunicator::split(std::span<const int> ranks) {
  if (ranks.empty()) return nullptr;  // rank 0 is not a member
  require(ranks.size() == 1, ErrorKind::internal, [&] {
    return "LocalCommunicator::split: " + std::to_string(ranks.size()) +
           " ranks asked of a communicator of size 1";
  });
  require_rank_zero(ranks[0], "split");
  return std::make_unique<LocalCommunicator>();
}

void LocalCommunicator::abort_job(int exit_code) {
  std::fflush(stderr);
  std::_Exit(exit_code);
}

}  // namespace tandem
