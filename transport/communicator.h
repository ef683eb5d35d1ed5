// Communicator: how ranks of one job exchange bytes and floats.
//
// Implementations: LocalCommunicator (world size 1: every role in one
// process, collectives are copies), MpiCommunicator (host buffers over
// Open MPI) and NcclCommunicator (the float collectives on GPU buffers
// through NCCL, the rest through a host communicator; built with CUDA).
// Ranks are numbered within the communicator; split() makes a
// sub-communicator (the target's tensor-parallel group) whose ranks are
// numbered 0.. in the order given.
//
// Collectives must be called by every rank of the communicator in the same
// order. Their float buffers are in the communicator's float memory (see
// floats_on_device() below), finished (no device work still writing them)
// and free (none still reading them): no call waits for other device work.
// Point-to-point messages carry a tag so that a receiver takes the kind of
// message it expects (Tandem's own tags: transport/tags.h); messages with
// one tag between two ranks arrive in the order sent.
//
// Not thread-safe: one thread per process talks through a communicator.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/error.h"
#include "transport/tags.h"

namespace tandem {

using Bytes = std::vector<std::byte>;

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  // data (n) = Σ over ranks of data (n), on every rank.
  virtual void all_reduce_sum(std::span<float> data) = 0;
  // all (size * n) = every rank's mine (n), in rank order, on every rank.
  virtual void all_gather(std::span<const float> mine, std::span<float> all) = 0;
  // The same, but only root receives (all is ignored elsewhere).
  virtual void gather(std::span<const float> mine, std::span<float> all, int root) = 0;
  // root's bytes replace every other rank's (sizes may differ before).
  virtual void broadcast(Bytes& bytes, int root) = 0;

  // Sends bytes to rank `to`; returns once the buffer may be reused.
  virtual void send(std::span<const std::byte> bytes, int to, int tag) = 0;
  // The same, but gives up once timeout_seconds pass without the transport
  // having taken the message, and returns false. A send to a process that
  // is gone can wait for ever (Open MPI first tries to connect to it again),
  // where a receive from it times out: this is how a sender notices. A
  // message given up on may still go out later, so the communicator keeps
  // its own copy of the bytes until then. The default sends at once.
  virtual bool send_within(std::span<const std::byte> bytes, int to, int tag,
                           double timeout_seconds) {
    (void)timeout_seconds;
    send(bytes, to, tag);
    return true;
  }
  // The next message with `tag` from rank `from`. Waits at most
  // timeout_seconds (negative: forever); std::nullopt when it passed.
  virtual std::optional<Bytes> receive(int from, int tag, double timeout_seconds) = 0;

  // Floats point to point in the communicator's float memory, the memory
  // its collectives take: GPU memory for NCCL (floats_on_device()), host
  // memory otherwise. The receiver names the exact count; floats between
  // two ranks arrive in the order sent; finished and free, as for the
  // collectives. receive_floats() waits as long as it takes, so call it
  // only when the sender is known to be sending (a message said so). The
  // defaults send them as a byte message with Tag::floats; NCCL sends them
  // GPU to GPU.
  virtual bool floats_on_device() const { return false; }
  virtual void send_floats(std::span<const float> data, int to) {
    send(std::as_bytes(data), to, tag_value(Tag::floats));
  }
  virtual void receive_floats(std::span<float> data, int from);

  // A communicator over the given ranks of this one (numbered in that
  // order). Every rank of this communicator must call it with the same
  // list; ranks not in the list get nullptr.
  virtual std::unique_ptr<Communicator> split(std::span<const int> ranks) = 0;

  // Ends the whole job at once with a non-zero exit code (used when a rank
  // is lost and waiting for it would hang every other rank).
  [[noreturn]] virtual void abort_job(int exit_code) = 0;
};

// Inline, like the rest of this interface: libraries that only talk
// through a Communicator need not link the transport library.
inline void Communicator::receive_floats(std::span<float> data, int from) {
  std::optional<Bytes> bytes = receive(from, tag_value(Tag::floats), -1);
  require(bytes.has_value(), ErrorKind::internal, [&] {
    return "receive_floats: no floats from rank " + std::to_string(from) +
           " (this communicator cannot wait for them)";
  });
  require(bytes->size() == data.size_bytes(), ErrorKind::internal, [&] {
    return "receive_floats: rank " + std::to_string(from) + " sent " +
           std::to_string(bytes->size() / sizeof(float)) + " floats, " +
           std::to_string(data.size()) + " were expected";
  });
  if (!data.empty()) std::memcpy(data.data(), bytes->data(), bytes->size());
}

}  // namespace tandem
