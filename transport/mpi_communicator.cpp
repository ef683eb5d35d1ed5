// MpiCommunicator (see mpi_communicator.h).
#include "transport/mpi_communicator.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <thread>
#include <utility>

#include "common/error.h"
#include "transport/mpi_error.h"

namespace tandem {

namespace {

using Clock = std::chrono::steady_clock;

// How receive() waits: spin this long first (a step's reply is often a few
// microseconds away), then sleep, doubling from the first sleep up to
// kBusySleep. While serving, ranks hand work to each other every few
// milliseconds, and each sleep's overshoot delays the step (1 ms naps cost
// the four-process tiny server a third of its throughput); a rank idle for
// longer than kBusyWindow naps up to kIdleSleep instead, so that an idle
// job costs about 1% of a core per rank rather than 10%.
constexpr auto kSpinTime = std::chrono::microseconds(50);
constexpr auto kFirstSleep = std::chrono::microseconds(10);
constexpr auto kBusySleep = std::chrono::microseconds(100);
constexpr auto kBusyWindow = std::chrono::milliseconds(50);
constexpr auto kIdleSleep = std::chrono::microseconds(1000);
constexpr double kForever = 1e9;  // seconds: about 30 years

// MPI counts are int: a larger buffer would need chunking, and no message
// or activation Tandem sends comes near 2^31 elements.
int mpi_count(size_t n, const char* operation) {
  require(n <= static_cast<size_t>(std::numeric_limits<int>::max()), ErrorKind::internal, [&] {
    return std::string(operation) + ": " + std::to_string(n) +
           " elements exceed MPI's int count; send it in smaller pieces";
  });
  return static_cast<int>(n);
}

std::string with_rank(const char* operation, int rank) {
  return std::string(operation) + " rank " + std::to_string(rank);
}

// The wait between two polls of receive() and send_within(), as kSpinTime
// above says; next() is false once the timeout has passed.
class PollWait {
 public:
  explicit PollWait(double timeout_seconds)
      // Negative means forever; so does a timeout beyond any job's life (or
      // NaN), which would overflow the clock's arithmetic below.
      : forever_(!(timeout_seconds >= 0) || timeout_seconds > kForever),
        deadline_(start_ + std::chrono::duration_cast<Clock::duration>(
                               std::chrono::duration<double>(forever_ ? 0.0 : timeout_seconds))) {}

  bool next() {
    const Clock::time_point now = Clock::now();
    if (!forever_ && now >= deadline_) return false;
    if (now - start_ < kSpinTime) return true;
    auto nap = std::chrono::duration_cast<Clock::duration>(sleep_);
    if (!forever_) nap = std::min(nap, deadline_ - now);
    std::this_thread::sleep_for(nap);
    sleep_ = std::min(sleep_ * 2, now - start_ < kBusyWindow ? kBusySleep : kIdleSleep);
    return true;
  }

 private:
  const Clock::time_point start_ = Clock::now();
  const bool forever_;
  const Clock::time_point deadline_;
  std::chrono::microseconds sleep_ = kFirstSleep;
};

}  // namespace

MpiCommunicator::MpiCommunicator(MPI_Comm comm) : comm_(comm) {
  require(comm != MPI_COMM_NULL, ErrorKind::internal, "MpiCommunicator over MPI_COMM_NULL");
  check_mpi(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  check_mpi(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
}

MpiCommunicator::~MpiCommunicator() { release(); }

MpiCommunicator::MpiCommunicator(MpiCommunicator&& other) noexcept
    : comm_(std::exchange(other.comm_, MPI_COMM_NULL)),
      rank_(other.rank_),
      size_(other.size_),
      given_up_(std::move(other.given_up_)) {}

MpiCommunicator& MpiCommunicator::operator=(MpiCommunicator&& other) noexcept {
  if (this != &other) {
    release();
    comm_ = std::exchange(other.comm_, MPI_COMM_NULL);
    rank_ = other.rank_;
    size_ = other.size_;
    given_up_ = std::move(other.given_up_);
  }
  return *this;
}

void MpiCommunicator::release() {
  if (comm_ == MPI_COMM_NULL) return;
  // After MPI_Finalize the handle is gone with MPI; freeing it then would
  // be an error, and a destructor must not throw.
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) {
    forget_finished_sends();
    // A send still not taken is to a rank that is gone, and the job is
    // ending: its bytes are left to the process's end rather than freed
    // under MPI, which may still read them.
    for (GivenUpSend& send : given_up_) {
      MPI_Request_free(&send.request);
      static_cast<void>(send.bytes.release());
    }
    MPI_Comm_free(&comm_);
  }
  given_up_.clear();
  comm_ = MPI_COMM_NULL;
}

void MpiCommunicator::require_peer(int peer, const char* operation) const {
  require(peer >= 0 && peer < size_, ErrorKind::internal, [&] {
    return std::string(operation) + ": rank " + std::to_string(peer) +
           " is not in a communicator of size " + std::to_string(size_);
  });
}

// ---- collectives --------------------------------------------------------------

void MpiCommunicator::all_reduce_sum(std::span<float> data) {
  const int n = mpi_count(data.size(), "MPI_Allreduce");
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, data.data(), n, MPI_FLOAT, MPI_SUM, comm_), "MPI_Allreduce");
}

void MpiCommunicator::all_gather(std::span<const float> mine, std::span<float> all) {
  require(all.size() == mine.size() * static_cast<size_t>(size_), ErrorKind::internal, [&] {
    return "MPI_Allgather: output holds " + std::to_string(all.size()) + " floats, expected " +
           std::to_string(size_) + " x " + std::to_string(mine.size());
  });
  const int n = mpi_count(mine.size(), "MPI_Allgather");
  check_mpi(MPI_Allgather(mine.data(), n, MPI_FLOAT, all.data(), n, MPI_FLOAT, comm_),
            "MPI_Allgather");
}

void MpiCommunicator::gather(std::span<const float> mine, std::span<float> all, int root) {
  require_peer(root, "MPI_Gather");
  if (rank_ == root) {
    require(all.size() == mine.size() * static_cast<size_t>(size_), ErrorKind::internal, [&] {
      return "MPI_Gather: root's output holds " + std::to_string(all.size()) +
             " floats, expected " + std::to_string(size_) + " x " + std::to_string(mine.size());
    });
  }
  const int n = mpi_count(mine.size(), "MPI_Gather");
  float* receive_buffer = rank_ == root ? all.data() : nullptr;
  check_mpi(MPI_Gather(mine.data(), n, MPI_FLOAT, receive_buffer, n, MPI_FLOAT, root, comm_),
            with_rank("MPI_Gather to root", root));
}

void MpiCommunicator::broadcast(Bytes& bytes, int root) {
  require_peer(root, "MPI_Bcast");
  // Size first: the other ranks' buffers may have any size before.
  uint64_t size = bytes.size();
  check_mpi(MPI_Bcast(&size, 1, MPI_UINT64_T, root, comm_), with_rank("MPI_Bcast (size) from", root));
  if (rank_ != root) bytes.resize(size);
  const int n = mpi_count(bytes.size(), "MPI_Bcast");
  if (n == 0) return;
  check_mpi(MPI_Bcast(bytes.data(), n, MPI_BYTE, root, comm_), with_rank("MPI_Bcast from", root));
}

// ---- point to point -------------------------------------------------------------

void MpiCommunicator::send(std::span<const std::byte> bytes, int to, int tag) {
  require_peer(to, "MPI_Send");
  const int n = mpi_count(bytes.size(), "MPI_Send");
  check_mpi(MPI_Send(bytes.data(), n, MPI_BYTE, to, tag, comm_), with_rank("MPI_Send to", to));
}

bool MpiCommunicator::send_within(std::span<const std::byte> bytes, int to, int tag,
                                  double timeout_seconds) {
  require_peer(to, "MPI_Isend");
  forget_finished_sends();
  const int n = mpi_count(bytes.size(), "MPI_Isend");
  // A copy: if the peer never takes it, MPI may read it after this returns.
  auto copy = std::make_unique<Bytes>(bytes.begin(), bytes.end());
  MPI_Request request = MPI_REQUEST_NULL;
  check_mpi(MPI_Isend(copy->data(), n, MPI_BYTE, to, tag, comm_, &request),
            with_rank("MPI_Isend to", to));
  PollWait wait(timeout_seconds);
  do {
    int done = 0;
    check_mpi(MPI_Test(&request, &done, MPI_STATUS_IGNORE), with_rank("MPI_Test of a send to", to));
    if (done) return true;
  } while (wait.next());
  given_up_.push_back({request, std::move(copy)});
  return false;
}

void MpiCommunicator::forget_finished_sends() {
  std::erase_if(given_up_, [](GivenUpSend& send) {
    int done = 0;
    return MPI_Test(&send.request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS || done != 0;
  });
}

std::optional<Bytes> MpiCommunicator::receive(int from, int tag, double timeout_seconds) {
  require_peer(from, "MPI_Recv");
  PollWait wait(timeout_seconds);
  // A matched probe (MPI_Improbe + MPI_Mrecv) receives exactly the message
  // probed, whose size is then known before the buffer is allocated.
  MPI_Message message = MPI_MESSAGE_NULL;
  MPI_Status status;
  for (;;) {
    int found = 0;
    check_mpi(MPI_Improbe(from, tag, comm_, &found, &message, &status),
              with_rank("MPI_Improbe from", from));
    if (found) break;
    if (!wait.next()) return std::nullopt;
  }
  int count = 0;
  check_mpi(MPI_Get_count(&status, MPI_BYTE, &count), with_rank("MPI_Get_count from", from));
  require(count != MPI_UNDEFINED && count >= 0, ErrorKind::internal, [&] {
    return with_rank("MPI_Recv from", from) + ": message size does not fit an int count";
  });
  Bytes bytes(static_cast<size_t>(count));
  check_mpi(MPI_Mrecv(bytes.data(), count, MPI_BYTE, &message, MPI_STATUS_IGNORE),
            with_rank("MPI_Mrecv from", from));
  return bytes;
}

// ---- sub-communicators and abort ------------------------------------------------

std::unique_ptr<Communicator> MpiCommunicator::split(std::span<const int> ranks) {
  // Checked here, not by MPI: MPI_Group_incl reports errors through
  // MPI_COMM_WORLD's handler, which may be fatal.
  std::vector<int> members(ranks.begin(), ranks.end());
  for (size_t i = 0; i < members.size(); ++i) {
    require_peer(members[i], "split");
    require(std::find(members.begin(), members.begin() + static_cast<std::ptrdiff_t>(i),
                      members[i]) == members.begin() + static_cast<std::ptrdiff_t>(i),
            ErrorKind::internal, [&] {
              return "split: rank " + std::to_string(members[i]) + " listed twice";
            });
  }
  if (members.empty()) return nullptr;  // every rank agrees: no MPI call needed
  MPI_Group parent = MPI_GROUP_NULL;
  MPI_Group group = MPI_GROUP_NULL;
  MPI_Comm sub = MPI_COMM_NULL;
  check_mpi(MPI_Comm_group(comm_, &parent), "MPI_Comm_group");
  int code = MPI_Group_incl(parent, static_cast<int>(members.size()), members.data(), &group);
  if (code == MPI_SUCCESS) code = MPI_Comm_create(comm_, group, &sub);
  if (group != MPI_GROUP_NULL) MPI_Group_free(&group);
  MPI_Group_free(&parent);
  check_mpi(code, "split (MPI_Group_incl / MPI_Comm_create)");
  if (sub == MPI_COMM_NULL) return nullptr;  // this rank is not a member
  return std::make_unique<MpiCommunicator>(sub);
}

void MpiCommunicator::abort_job(int exit_code) {
  std::fflush(stderr);
  MPI_Abort(comm_, exit_code);
  std::_Exit(exit_code);  // MPI_Abort does not return; if it ever did, still end
}

}  // namespace tandem
