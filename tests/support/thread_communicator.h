// ThreadCommunicator: N ranks as N threads of one test process, for
// tensor-parallel tests that need no MPI launcher.
//
// The ranks share a ThreadGroup. A collective publishes each rank's buffer
// in a slot, waits at a barrier, reads the peers' slots, and waits again
// before the slots may be reused. all_reduce_sum adds in rank order on every
// rank, so all ranks get bit-identical sums (as a real all-reduce must).
// Point-to-point messages go through per-(from, to, tag) queues.
//
// The barrier is our own rather than std::barrier so that a rank that
// throws can poison the group: its peers then throw too instead of waiting
// for it forever, and the test reports the first error.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <mutex>
#include <thread>
#include <tuple>
#include <vector>

#include "common/error.h"
#include "transport/communicator.h"

namespace tandem::test_support {

class ThreadGroup {
 public:
  // Slots: what each rank publishes for the current collective.
  std::vector<const float*> float_slots;
  std::vector<Bytes*> byte_slots;

  explicit ThreadGroup(int size)
      : float_slots(static_cast<size_t>(size)), byte_slots(static_cast<size_t>(size)), size_(size) {}
  int size() const { return size_; }

  // Every rank calls it; returns when all have. Throws once the group is
  // poisoned.
  void arrive_and_wait() {
    std::unique_lock lock(mutex_);
    if (poisoned_) throw Error(ErrorKind::internal, "a peer rank failed");
    const uint64_t generation = generation_;
    if (++arrived_ == size_) {
      arrived_ = 0;
      ++generation_;
      changed_.notify_all();
      return;
    }
    changed_.wait(lock, [&] { return generation_ != generation || poisoned_; });
    if (generation_ == generation) throw Error(ErrorKind::internal, "a peer rank failed");
  }
  void poison() {
    std::lock_guard lock(mutex_);
    poisoned_ = true;
    changed_.notify_all();
  }

  void push(int from, int to, int tag, Bytes bytes) {
    std::lock_guard lock(mutex_);
    queues_[{from, to, tag}].push_back(std::move(bytes));
    changed_.notify_all();
  }
  std::optional<Bytes> pop(int from, int to, int tag, double timeout_seconds) {
    std::unique_lock lock(mutex_);
    auto& queue = queues_[{from, to, tag}];
    auto ready = [&] { return !queue.empty() || poisoned_; };
    if (timeout_seconds < 0) {
      changed_.wait(lock, ready);
    } else if (!changed_.wait_for(lock, std::chrono::duration<double>(timeout_seconds), ready)) {
      return std::nullopt;
    }
    if (queue.empty()) throw Error(ErrorKind::internal, "a peer rank failed");
    Bytes bytes = std::move(queue.front());
    queue.pop_front();
    return bytes;
  }

 private:
  const int size_;
  std::mutex mutex_;
  std::condition_variable changed_;
  int arrived_ = 0;
  uint64_t generation_ = 0;
  bool poisoned_ = false;
  std::map<std::tuple<int, int, int>, std::deque<Bytes>> queues_;
};

class ThreadCommunicator : public Communicator {
 public:
  ThreadCommunicator(ThreadGroup& group, int rank) : group_(group), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return group_.size(); }

  void all_reduce_sum(std::span<float> data) override {
    group_.float_slots[static_cast<size_t>(rank_)] = data.data();
    group_.arrive_and_wait();
    sum_.assign(data.size(), 0.0f);
    for (const float* peer : group_.float_slots)
      for (size_t i = 0; i < data.size(); ++i) sum_[i] += peer[i];
    group_.arrive_and_wait();  // every peer has read our data before we overwrite it
    std::copy(sum_.begin(), sum_.end(), data.begin());
  }
  void all_gather(std::span<const float> mine, std::span<float> all) override {
    gather_into(mine, all, true);
  }
  void gather(std::span<const float> mine, std::span<float> all, int root) override {
    gather_into(mine, all, rank_ == root);
  }
  void broadcast(Bytes& bytes, int root) override {
    group_.byte_slots[static_cast<size_t>(rank_)] = &bytes;
    group_.arrive_and_wait();
    if (rank_ != root) bytes = *group_.byte_slots[static_cast<size_t>(root)];
    group_.arrive_and_wait();
  }
  void send(std::span<const std::byte> bytes, int to, int tag) override {
    group_.push(rank_, to, tag, Bytes(bytes.begin(), bytes.end()));
  }
  std::optional<Bytes> receive(int from, int tag, double timeout_seconds) override {
    return group_.pop(from, rank_, tag, timeout_seconds);
  }
  std::unique_ptr<Communicator> split(std::span<const int>) override {
    throw Error(ErrorKind::unsupported, "ThreadCommunicator does not split");
  }
  [[noreturn]] void abort_job(int exit_code) override { std::_Exit(exit_code); }

 private:
  void gather_into(std::span<const float> mine, std::span<float> all, bool receives) {
    group_.float_slots[static_cast<size_t>(rank_)] = mine.data();
    group_.arrive_and_wait();
    if (receives) {
      for (size_t r = 0; r < group_.float_slots.size(); ++r) {
        std::copy(group_.float_slots[r], group_.float_slots[r] + mine.size(),
                  all.begin() + static_cast<std::ptrdiff_t>(r * mine.size()));
      }
    }
    group_.arrive_and_wait();
  }

  ThreadGroup& group_;
  int rank_;
  std::vector<float> sum_;
};

// Runs body(comm) on `size` threads, one per rank, and rethrows the first
// exception (the cause, not the "peer failed" it triggers in the others)
// after all ranks have stopped.
inline void run_ranks(int size, const std::function<void(Communicator&)>& body) {
  ThreadGroup group(size);
  std::mutex error_mutex;
  std::exception_ptr first_error;
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      ThreadCommunicator comm(group, r);
      try {
        body(comm);
      } catch (...) {
        {
          std::lock_guard lock(error_mutex);
          if (!first_error) first_error = std::current_exception();
        }
        group.poison();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  if (first_error) std::rethrow_exception(first_error);
}

}  // namespace tandem::test_support
