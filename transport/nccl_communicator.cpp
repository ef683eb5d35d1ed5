// NcclCommunicator (see nccl_communicator.h).
//
// Ordering with the caller's kernels. The CUDA backend launches its kernels
// on a stream of its own that this class cannot see, and NCCL runs on
// stream_. Two things must hold:
//   1. the collective must not read its input before the kernels writing it
//      are done;
//   2. the caller's next kernel must not read the output before the
//      collective is done.
// (1) is the caller's: the floats must be finished (communicator.h), and
// LlamaModel synchronizes its backend before each collective. We do not
// wait for the device ourselves: cudaDeviceSynchronize waits for every
// stream on the GPU, and a draft sharing it may be capturing a step graph
// on its own thread, which such a wait invalidates. For (2) we wait on the
// host until stream_ is idle before returning; the call's wall time is then
// the communication time that LlamaModel reports.
// The cost is a host round trip per collective and no overlap of
// communication with compute. The faster way, for when the backend exposes
// its stream: record an event on the compute stream, cudaStreamWaitEvent
// on stream_, enqueue, record an event on stream_, cudaStreamWaitEvent on
// the compute stream, and return without any host wait (or simply enqueue
// NCCL on the compute stream).
#include "transport/nccl_communicator.h"

#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/error.h"

namespace tandem {

NcclCommunicator::NcclCommunicator(std::unique_ptr<Communicator> host, int device)
    : host_(std::move(host)), device_(device) {
  require(host_ != nullptr, ErrorKind::internal, "NcclCommunicator over a null host communicator");
  try {
    join(make_id_or_fail());
  } catch (...) {
    release();  // the destructor does not run for a constructor that throws
    throw;
  }
}

Bytes NcclCommunicator::make_id_or_fail() {
  // Local setup first, then agree over the host communicator that every
  // rank got through it: a rank that threw here on its own would leave the
  // others waiting in the id broadcast or in ncclCommInitRank forever.
  Bytes id_bytes;
  std::string local_failure;
  try {
    check(cudaSetDevice(device_), "cudaSetDevice");
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    if (rank() == 0) {
      ncclUniqueId id;
      check(ncclGetUniqueId(&id), "ncclGetUniqueId");
      id_bytes.resize(sizeof id);
      std::memcpy(id_bytes.data(), &id, sizeof id);
    }
  } catch (const Error& error) {
    local_failure = error.what();
  }
  std::vector<float> failures = {local_failure.empty() ? 0.0f : 1.0f};
  host_->all_reduce_sum(failures);  // host floats: the host communicator's own
  if (!local_failure.empty()) throw Error(ErrorKind::internal, local_failure);
  require(failures[0] == 0.0f, ErrorKind::internal, [&] {
    return "NCCL setup failed on another rank of the group (rank " + std::to_string(rank()) +
           " was fine; that rank's log says why)";
  });
  host_->broadcast(id_bytes, 0);
  return id_bytes;
}

void NcclCommunicator::join(const Bytes& id_bytes) {
  require(id_bytes.size() == sizeof(ncclUniqueId), ErrorKind::internal, [&] {
    return "NCCL unique id from rank 0 has " + std::to_string(id_bytes.size()) +
           " bytes, expected " + std::to_string(sizeof(ncclUniqueId));
  });
  ncclUniqueId id;
  std::memcpy(&id, id_bytes.data(), sizeof id);
  check(ncclCommInitRank(&comm_, size(), id, rank()), "ncclCommInitRank");
}

NcclCommunicator::~NcclCommunicator() {
  // An exception on its way out means this rank is leaving the group's
  // lockstep (the job is about to abort): a peer may never join a clean
  // shutdown, so abort rather than destroy.
  if (std::uncaught_exceptions() > 0) broken_ = true;
  release();
}

void NcclCommunicator::release() noexcept {
  // Errors are ignored: a destructor must not throw, and at process exit
  // the CUDA context may already be gone.
  if (comm_ != nullptr || stream_ != nullptr) (void)cudaSetDevice(device_);
  if (comm_ != nullptr) {
    // ncclCommAbort stops kernels still waiting on a peer; ncclCommDestroy
    // would wait for them, forever if the peer is gone.
    (void)(broken_ ? ncclCommAbort(comm_) : ncclCommDestroy(comm_));
    comm_ = nullptr;
  }
  if (stream_ != nullptr) {
    (void)cudaStreamDestroy(stream_);
    stream_ = nullptr;
  }
}

// ---- errors and checks -----------------------------------------------------------

void NcclCommunicator::check(cudaError_t status, const char* call) {
  if (status == cudaSuccess) return;
  broken_ = true;
  const ErrorKind kind =
      status == cudaErrorMemoryAllocation ? ErrorKind::out_of_resources : ErrorKind::internal;
  throw Error(kind, std::string("CUDA error in ") + call + " (NCCL communicator, rank " +
                        std::to_string(rank()) + ", device " + std::to_string(device_) +
                        "): " + cudaGetErrorString(status));
}

void NcclCommunicator::check(ncclResult_t status, const char* call) {
  if (status == ncclSuccess) return;
  broken_ = true;
  std::string message = std::string("NCCL error in ") + call + " (rank " + std::to_string(rank()) +
                        " of " + std::to_string(size()) + ", device " + std::to_string(device_) +
                        "): " + ncclGetErrorString(status);
  // NCCL's own last message says more (which peer, which transport); it may
  // belong to an earlier call, so it is given as context only.
  const char* last = ncclGetLastError(comm_);
  if (last != nullptr && *last != '\0')
    message += " (NCCL's last message: " + std::string(last) + ")";
  // A remote error is a peer gone or a network down: another rank stopped
  // answering, which callers report as unavailable.
  const ErrorKind kind = status == ncclRemoteError ? ErrorKind::unavailable : ErrorKind::internal;
  throw Error(kind, message);
}

void NcclCommunicator::require_device_memory(const void* pointer, const char* operation) {
  // A host pointer handed to NCCL would fault inside a kernel (or read
  // garbage); one driver call here turns that into a message. The CPU
  // backend's Buffers are host memory, so this is the check that catches a
  // cpu-backend target given an NCCL group.
  cudaPointerAttributes attributes{};
  check(cudaPointerGetAttributes(&attributes, pointer), "cudaPointerGetAttributes");
  const bool device = attributes.type == cudaMemoryTypeDevice;
  require(device || attributes.type == cudaMemoryTypeManaged, ErrorKind::internal, [&] {
    return std::string(operation) + ": buffer is not GPU memory (NCCL communicator, rank " +
           std::to_string(rank()) + "). Hint: the target's backend must be cuda";
  });
  require(!device || attributes.device == device_, ErrorKind::internal, [&] {
    return std::string(operation) + ": buffer is on device " + std::to_string(attributes.device) +
           " but the NCCL communicator on device " + std::to_string(device_);
  });
}

void NcclCommunicator::require_peer(int peer, const char* operation) const {
  require(peer >= 0 && peer < size(), ErrorKind::internal, [&] {
    return std::string(operation) + ": rank " + std::to_string(peer) +
           " is not in a communicator of size " + std::to_string(size());
  });
}

void NcclCommunicator::use_device() { check(cudaSetDevice(device_), "cudaSetDevice"); }

void NcclCommunicator::wait_for_collective(const char* operation) {
  // Polled rather than cudaStreamSynchronize: while waiting, NCCL can
  // report a peer that failed (ncclCommGetAsyncError), which a plain
  // synchronize would wait on forever. Not every transport notices a dead
  // peer (shared memory and NVLink may not); the coordinator's step
  // timeout and abort_job stay the backstop.
  for (;;) {
    const cudaError_t state = cudaStreamQuery(stream_);
    if (state == cudaSuccess) return;
    if (state != cudaErrorNotReady) check(state, operation);
    ncclResult_t async = ncclSuccess;
    check(ncclCommGetAsyncError(comm_, &async), "ncclCommGetAsyncError");
    check(async, operation);
    std::this_thread::yield();
  }
}

// ---- collectives on device floats -----------------------------------------------
// Every rank passes the same sizes, so an empty call returns on every rank
// alike without touching NCCL.

void NcclCommunicator::all_reduce_sum(std::span<float> data) {
  if (data.empty()) return;
  require_device_memory(data.data(), "ncclAllReduce");
  use_device();
  check(ncclAllReduce(data.data(), data.data(), data.size(), ncclFloat, ncclSum, comm_, stream_),
        "ncclAllReduce");
  wait_for_collective("ncclAllReduce");
}

void NcclCommunicator::all_gather(std::span<const float> mine, std::span<float> all) {
  require(all.size() == mine.size() * static_cast<size_t>(size()), ErrorKind::internal, [&] {
    return "ncclAllGather: output holds " + std::to_string(all.size()) + " floats, expected " +
           std::to_string(size()) + " x " + std::to_string(mine.size());
  });
  if (mine.empty()) return;
  require_device_memory(mine.data(), "ncclAllGather (input)");
  require_device_memory(all.data(), "ncclAllGather (output)");
  use_device();
  check(ncclAllGather(mine.data(), all.data(), mine.size(), ncclFloat, comm_, stream_),
        "ncclAllGather");
  wait_for_collective("ncclAllGather");
}

void NcclCommunicator::gather(std::span<const float> mine, std::span<float> all, int root) {
  require_peer(root, "gather");
  const bool is_root = rank() == root;
  const size_t n = mine.size();
  if (is_root) {
    require(all.size() == n * static_cast<size_t>(size()), ErrorKind::internal, [&] {
      return "gather: root's output holds " + std::to_string(all.size()) + " floats, expected " +
             std::to_string(size()) + " x " + std::to_string(n);
    });
  }
  if (n == 0) return;
  require_device_memory(mine.data(), "gather (input)");
  if (is_root) require_device_memory(all.data(), "gather (output)");
  use_device();

  // NCCL has no gather: the root receives from every other rank in one
  // group (so the transfers run together and cannot deadlock on order) and
  // copies its own slice on the same stream.
  if (is_root) {
    float* own = all.data() + static_cast<size_t>(root) * n;
    if (own != mine.data()) {
      check(cudaMemcpyAsync(own, mine.data(), n * sizeof(float), cudaMemcpyDeviceToDevice, stream_),
            "cudaMemcpyAsync (gather, root's own slice)");
    }
  }
  check(ncclGroupStart(), "ncclGroupStart");
  // The group is closed even when queueing failed, or NCCL's per-thread
  // group state would swallow the next collective.
  ncclResult_t queued = ncclSuccess;
  if (is_root) {
    for (int peer = 0; peer < size() && queued == ncclSuccess; ++peer) {
      if (peer == root) continue;
      queued =
          ncclRecv(all.data() + static_cast<size_t>(peer) * n, n, ncclFloat, peer, comm_, stream_);
    }
  } else {
    queued = ncclSend(mine.data(), n, ncclFloat, root, comm_, stream_);
  }
  const ncclResult_t ended = ncclGroupEnd();
  check(queued, is_root ? "ncclRecv (gather)" : "ncclSend (gather)");
  check(ended, "ncclGroupEnd (gather)");
  wait_for_collective("gather (ncclSend/ncclRecv)");
}

// ---- device floats point to point -----------------------------------------------
// Each call waits until its transfer is done: the receiver may read the
// floats right away, and the sender may reuse its buffer. Like the
// collectives they take finished floats and a free buffer (communicator.h).

void NcclCommunicator::send_floats(std::span<const float> data, int to) {
  require_peer(to, "ncclSend");
  if (data.empty()) return;  // the receiver names the same count: no call there either
  require_device_memory(data.data(), "ncclSend");
  use_device();
  check(ncclSend(data.data(), data.size(), ncclFloat, to, comm_, stream_), "ncclSend");
  wait_for_collective("ncclSend");
}

void NcclCommunicator::receive_floats(std::span<float> data, int from) {
  require_peer(from, "ncclRecv");
  if (data.empty()) return;
  require_device_memory(data.data(), "ncclRecv");
  use_device();
  check(ncclRecv(data.data(), data.size(), ncclFloat, from, comm_, stream_), "ncclRecv");
  wait_for_collective("ncclRecv");
}

// ---- host bytes: the host communicator's ------------------------------------------

void NcclCommunicator::broadcast(Bytes& bytes, int root) { host_->broadcast(bytes, root); }

void NcclCommunicator::send(std::span<const std::byte> bytes, int to, int tag) {
  host_->send(bytes, to, tag);
}

bool NcclCommunicator::send_within(std::span<const std::byte> bytes, int to, int tag,
                                   double timeout_seconds) {
  return host_->send_within(bytes, to, tag, timeout_seconds);
}

std::optional<Bytes> NcclCommunicator::receive(int from, int tag, double timeout_seconds) {
  return host_->receive(from, tag, timeout_seconds);
}

std::unique_ptr<Communicator> NcclCommunicator::split(std::span<const int> ranks) {
  std::unique_ptr<Communicator> sub = host_->split(ranks);
  if (sub == nullptr) return nullptr;  // not a member: no part in the new NCCL communicator
  return std::make_unique<NcclCommunicator>(std::move(sub), device_);
}

void NcclCommunicator::abort_job(int exit_code) {
  broken_ = true;
  release();  // aborts NCCL: no kernel left spinning on a peer that is gone
  host_->abort_job(exit_code);
  std::_Exit(exit_code);  // not reached (the host's abort_job does not return)
}

std::unique_ptr<Communicator> make_nccl_communicator(std::unique_ptr<Communicator> host,
                                                     int device) {
  return std::make_unique<NcclCommunicator>(std::move(host), device);
}

}  // namespace tandem
