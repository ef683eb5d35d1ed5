// NcclCommunicator: the Communicator of a tensor-parallel group whose float
// buffers live in GPU memory (the CUDA backend's Buffers).
//
// Composition, not a second transport: it owns the host Communicator of
// the same group (the MpiCommunicator that split() made) and passes it
// everything on host bytes (broadcast, send/receive with their tags and
// timeouts, rank/size, abort_job). The float collectives (all_reduce_sum,
// all_gather, gather) and floats point to point (send_floats,
// receive_floats) take DEVICE pointers and go through NCCL. A host pointer
// there is an Error, not a crash inside NCCL.
//
// One GPU per rank: NCCL does not support two ranks of one communicator on
// the same device (it fails with "Duplicate GPU detected" or hangs), so
// `device` must differ between the ranks of a group on one host.
//
// Every call takes finished floats (no kernel still writing them; the
// caller synchronizes its stream first) and returns with its result in
// place, so the caller may read the buffer or launch the next kernel on any
// stream right away, and the time spent in the call is the communication
// time. It never waits for the whole device: another thread may be
// capturing a CUDA graph on the same GPU (see the .cpp).
//
// Built only with CUDA and NCCL (the tandem_transport_nccl target).
// Not thread-safe, like every Communicator. Not copyable or movable.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <memory>

#include "transport/communicator.h"

namespace tandem {

class NcclCommunicator final : public Communicator {
 public:
  // Collective over `host`: every rank of it calls this with its own GPU.
  // Sets `device` current for this thread; rank 0 makes the NCCL id and
  // broadcasts it over `host`, then all join with ncclCommInitRank. Throws
  // Error when `host` is null, or when CUDA or NCCL fail.
  NcclCommunicator(std::unique_ptr<Communicator> host, int device);
  ~NcclCommunicator() override;
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int rank() const override { return host_->rank(); }
  int size() const override { return host_->size(); }

  // Device buffers (cudaMalloc'd or managed), on this communicator's device.
  void all_reduce_sum(std::span<float> data) override;
  void all_gather(std::span<const float> mine, std::span<float> all) override;
  void gather(std::span<const float> mine, std::span<float> all, int root) override;

  // Device floats point to point: ncclSend / ncclRecv on the stream.
  bool floats_on_device() const override { return true; }
  void send_floats(std::span<const float> data, int to) override;
  void receive_floats(std::span<float> data, int from) override;

  // Host bytes: the host communicator's.
  void broadcast(Bytes& bytes, int root) override;
  void send(std::span<const std::byte> bytes, int to, int tag) override;
  bool send_within(std::span<const std::byte> bytes, int to, int tag,
                   double timeout_seconds) override;
  std::optional<Bytes> receive(int from, int tag, double timeout_seconds) override;

  // Splits the host communicator, then makes an NCCL communicator over the
  // members on this same device: device memory stays device memory in the
  // sub-group. Collective over this communicator; non-members get nullptr
  // and take no part in the new NCCL communicator.
  std::unique_ptr<Communicator> split(std::span<const int> ranks) override;

  // Aborts the NCCL communicator (so no kernel is left waiting on a peer
  // that is gone), then ends the job through the host communicator.
  [[noreturn]] void abort_job(int exit_code) override;

  int device() const { return device_; }

 private:
  // Construction in two steps: set up locally and agree that every rank
  // did (returns the id rank 0 broadcast), then join the NCCL clique.
  Bytes make_id_or_fail();
  void join(const Bytes& id_bytes);
  // Aborts or destroys the NCCL communicator (by broken_), then the stream.
  void release() noexcept;
  // Every failure goes through these: they note that the communicator is
  // broken (the destructor then aborts instead of destroying) and throw.
  void check(cudaError_t status, const char* call);
  void check(ncclResult_t status, const char* call);
  void require_device_memory(const void* pointer, const char* operation);
  void require_peer(int peer, const char* operation) const;
  // Makes this communicator's GPU current for the calling thread.
  void use_device();
  // After each call: see the ordering note in the .cpp.
  void wait_for_collective(const char* operation);

  std::unique_ptr<Communicator> host_;  // declared first: destroyed last
  int device_ = 0;
  cudaStream_t stream_ = nullptr;
  ncclComm_t comm_ = nullptr;
  bool broken_ = false;  // an NCCL or CUDA call failed, or the job is aborting
};

// The factory the serving path calls for a CUDA target group.
std::unique_ptr<Communicator> make_nccl_communicator(std::unique_ptr<Communicator> host,
                                                     int device);

}  // namespace tandem
