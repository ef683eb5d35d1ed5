// MpiCommunicator: the Communicator over an MPI communicator, host buffers.
//
// Used when the job is launched by mpirun/srun and the NCCL communicator is
// not (CPU backend, or the control messages between roles). Floats travel
// as MPI_FLOAT and are summed with MPI_SUM; byte messages as MPI_BYTE.
// MPI errors return (MPI_ERRORS_RETURN) and become Error(internal) naming
// the operation and peer, so the caller can abort_job() with a clear log
// line instead of MPI killing the process mid-call.
//
// Owns its MPI_Comm (freed in the destructor), so it must be destroyed
// before MPI_Finalize, i.e. before the MpiRuntime that made it. Move-only.
#pragma once

#include <mpi.h>

#include <memory>
#include <vector>

#include "transport/communicator.h"

namespace tandem {

class MpiCommunicator final : public Communicator {
 public:
  // Takes ownership of comm (not MPI_COMM_WORLD or MPI_COMM_SELF: pass a
  // dup) and sets MPI_ERRORS_RETURN on it.
  explicit MpiCommunicator(MPI_Comm comm);
  ~MpiCommunicator() override;
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;
  MpiCommunicator(MpiCommunicator&& other) noexcept;
  MpiCommunicator& operator=(MpiCommunicator&& other) noexcept;

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void all_reduce_sum(std::span<float> data) override;
  void all_gather(std::span<const float> mine, std::span<float> all) override;
  void gather(std::span<const float> mine, std::span<float> all, int root) override;
  void broadcast(Bytes& bytes, int root) override;

  void send(std::span<const std::byte> bytes, int to, int tag) override;
  // MPI_Isend of a copy, polled like receive() below; a send given up on
  // keeps its copy here until it completes (checked at each later call).
  bool send_within(std::span<const std::byte> bytes, int to, int tag,
                   double timeout_seconds) override;
  // Polls with MPI_Improbe: spins for a few microseconds (a reply that is
  // already on its way arrives without a sleep), then sleeps with a backoff
  // growing to 1 ms, so an idle worker waiting minutes for its next step
  // does not burn a core that the other ranks' kernels need.
  std::optional<Bytes> receive(int from, int tag, double timeout_seconds) override;

  // MPI_Comm_create over the parent: collective, every rank calls it.
  std::unique_ptr<Communicator> split(std::span<const int> ranks) override;

  [[noreturn]] void abort_job(int exit_code) override;

  MPI_Comm handle() const { return comm_; }

 private:
  // A send_within() that timed out: MPI may still read its bytes.
  struct GivenUpSend {
    MPI_Request request = MPI_REQUEST_NULL;
    std::unique_ptr<Bytes> bytes;
  };

  void release();
  void require_peer(int peer, const char* operation) const;
  void forget_finished_sends();

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 0;
  std::vector<GivenUpSend> given_up_;
};

}  // namespace tandem
