// ForwardingCommunicator: a Communicator that passes every call on to
// another one it does not own. As it is, a non-owning handle (for APIs that
// take a std::unique_ptr<Communicator>); a test derives from it to change
// only the calls it is about.
#pragma once

#include <cstdlib>
#include <memory>
#include <optional>
#include <span>

#include "transport/communicator.h"

namespace tandem::test_support {

class ForwardingCommunicator : public Communicator {
 public:
  explicit ForwardingCommunicator(Communicator& inner) : inner_(inner) {}
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  void all_reduce_sum(std::span<float> data) override { inner_.all_reduce_sum(data); }
  void all_gather(std::span<const float> mine, std::span<float> all) override {
    inner_.all_gather(mine, all);
  }
  void gather(std::span<const float> mine, std::span<float> all, int root) override {
    inner_.gather(mine, all, root);
  }
  void broadcast(Bytes& bytes, int root) override { inner_.broadcast(bytes, root); }
  void send(std::span<const std::byte> bytes, int to, int tag) override {
    inner_.send(bytes, to, tag);
  }
  std::optional<Bytes> receive(int from, int tag, double timeout_seconds) override {
    return inner_.receive(from, tag, timeout_seconds);
  }
  std::unique_ptr<Communicator> split(std::span<const int> ranks) override {
    return inner_.split(ranks);
  }
  [[noreturn]] void abort_job(int exit_code) override {
    inner_.abort_job(exit_code);
    std::_Exit(exit_code);  // not reached
  }

 protected:
  Communicator& inner() { return inner_; }

 private:
  Communicator& inner_;
};

}  // namespace tandem::test_support
