#include "cluster/links/q_rows_link.h"

#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>

#include "common/error.h"
#ifdef TANDEM_HAVE_NCCL
#include "transport/nccl_communicator.h"
#endif

namespace tandem {
namespace {

constexpr int kQRowsTag = tag_value(Tag::q_rows);

// "machine:device" of this rank's GPU: two ranks with the same one cannot
// share an NCCL communicator ("Duplicate GPU detected"). The machine is its
// boot id, which containers on one machine share (their host names may
// differ); the host name where there is none.
std::string gpu_identity(int device) {
  std::string machine;
  std::ifstream("/proc/sys/kernel/random/boot_id") >> machine;
  if (machine.empty()) {
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    machine = host;
  }
  return machine + ":" + std::to_string(device);
}

// Both members learn both identities (two broadcasts over the pair).
bool same_gpu(Communicator& pair, const std::string& mine) {
  std::string identities[2];
  for (int root = 0; root < 2; ++root) {
    Bytes bytes;
    if (pair.rank() == root) {
      const auto* begin = reinterpret_cast<const std::byte*>(mine.data());
      bytes.assign(begin, begin + mine.size());
    }
    pair.broadcast(bytes, root);
    identities[root].assign(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  }
  return identities[0] == identities[1];
}

size_t floats_of(const wire::QRows& message) {
  size_t rows = 0;
  for (const wire::QRows::Entry& entry : message.entries) rows += static_cast<size_t>(entry.rows);
  return rows * static_cast<size_t>(message.vocab);
}

}  // namespace

QRowsLink::QRowsLink(std::unique_ptr<Communicator> pair) : pair_(std::move(pair)) {
  require(pair_ != nullptr && pair_->size() == 2, ErrorKind::internal,
          "a q rows link needs a communicator of two ranks");
}

std::unique_ptr<QRowsLink> QRowsLink::connect(Communicator& world, const ClusterLayout& layout,
                                              bool has_draft) {
  const RankPlacement& placement = layout.placement;
  const int verifier = placement.target_ranks.front();
  // Every rank agrees: no draft, or the draft in the verifier's process.
  if (!has_draft || placement.draft_rank == verifier) return nullptr;
  const int members[] = {placement.draft_rank, verifier};
  std::unique_ptr<Communicator> pair = world.split(members);
  if (pair == nullptr) return nullptr;
  if (placement.backend == BackendKind::cuda) {
    const int device =
        layout.rank == placement.draft_rank ? placement.draft_device : placement.target_device(0);
    // Both decide alike: same identities, same build.
    const bool shared = same_gpu(*pair, gpu_identity(device));
#ifdef TANDEM_HAVE_NCCL
    if (!shared) pair = make_nccl_communicator(std::move(pair), device);
#else
    (void)shared;
#endif
  }
  return std::make_unique<QRowsLink>(std::move(pair));
}

// ---- the draft rank ---------------------------------------------------------------

void QRowsLink::send(wire::QRows message, std::span<const DeviceRows> rows) {
  require(rows.size() == message.entries.size(), ErrorKind::internal, [&] {
    return "QRows of draft step " + std::to_string(message.step) + ": " +
           std::to_string(message.entries.size()) + " entries, " + std::to_string(rows.size()) +
           " sets of rows";
  });
  size_t floats = 0;
  for (size_t k = 0; k < rows.size(); ++k) {
    const size_t named = static_cast<size_t>(message.entries[k].rows) *
                         static_cast<size_t>(message.vocab);
    require(rows[k].size() == named, ErrorKind::internal, [&] {
      return "QRows of draft step " + std::to_string(message.step) + ": session " +
             std::to_string(message.entries[k].session) + " names " + std::to_string(named) +
             " floats of rows, " + std::to_string(rows[k].size()) + " are given";
    });
    floats += named;
  }
  // Runs: consecutive entries whose rows lie side by side in one backend's
  // memory go as one transfer (a model drafter's call leaves all of its
  // sessions' rows so); an entry without rows joins any run.
  message.runs.clear();
  std::vector<std::span<const float>> transfers;
  const DeviceRows* last = nullptr;  // the last entry with rows
  for (const DeviceRows& r : rows) {
    const bool joins = !transfers.empty() && (r.empty() || (last != nullptr && r.follows(*last)));
    if (joins) {
      ++message.runs.back();
      transfers.back() = {transfers.back().data(), transfers.back().size() + r.size()};
    } else {
      message.runs.push_back(1);
      transfers.push_back({r.data(), r.size()});
    }
    if (!r.empty()) last = &r;
  }
  pair_->send(wire::encode(message), kVerifier, kQRowsTag);
  if (floats == 0) return;
  // Host copies where the floats cannot go as they are: a GPU's rows over
  // a host communicator. download_finished: the drafter may already be
  // drafting again on another thread.
  Backend& backend = *rows.front().backend();
  const bool as_they_are = device_to_device() || backend.reads_host_memory();
  for (std::span<const float> run : transfers) {
    if (run.empty()) continue;
    if (as_they_are) {
      pair_->send_floats(run, kVerifier);
      continue;
    }
    staged_.resize(run.size());
    backend.download_finished(run.data(), staged_);
    pair_->send_floats(staged_, kVerifier);
  }
}

void QRowsLink::send_end() { send(wire::QRows{}, {}); }

// ---- the verifying rank --------------------------------------------------------------

void QRowsLink::receive_into(Backend& backend) {
  // Rows stay held until a target step has used or passed them: with
  // pipelined drafting, a few draft steps at once.
  pool_ = std::make_unique<RowsPool>(backend, 8);
}

std::optional<ArrivedQRows> QRowsLink::receive(double timeout_seconds) {
  require(pool_ != nullptr, ErrorKind::internal, "QRowsLink::receive before receive_into");
  if (ended_) return std::nullopt;
  std::optional<Bytes> bytes = pair_->receive(kDraft, kQRowsTag, timeout_seconds);
  if (!bytes) return std::nullopt;
  ArrivedQRows arrived;
  arrived.header = wire::decode_q_rows(*bytes);
  if (arrived.header.entries.empty()) {
    ended_ = true;
    return std::nullopt;
  }
  const size_t floats = floats_of(arrived.header);
  Backend& backend = pool_->backend();
  std::shared_ptr<Buffer> storage = pool_->acquire(floats);
  // Received straight into the buffer, the rows are written from outside
  // the backend's queue (NCCL's stream, or this thread): ops still queued
  // on the buffer there (a fresh one's zero fill, a reused one's last
  // reads) must finish first. Uploads are queued behind them anyway.
  const bool straight_in = device_to_device() || backend.reads_host_memory();
  if (straight_in) backend.record_event()->wait();
  // Each run into its place, side by side again.
  const size_t V = static_cast<size_t>(arrived.header.vocab);
  size_t entry = 0;
  size_t at = 0;
  for (int32_t run : arrived.header.runs) {
    size_t count = 0;
    for (int32_t k = 0; k < run; ++k, ++entry)
      count += static_cast<size_t>(arrived.header.entries[entry].rows) * V;
    if (count == 0) continue;  // send() sent nothing for it
    const std::span<float> into(storage->data() + at, count);
    if (straight_in) {
      pair_->receive_floats(into, kDraft);
    } else {
      staged_.resize(count);
      pair_->receive_floats(staged_, kDraft);
      backend.upload(staged_, into.data());
    }
    at += count;
  }
  arrived.rows = DeviceRows(backend, std::move(storage), 0, floats);
  return arrived;
}

bool QRowsLink::drop_until_end(double timeout_seconds) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds);
  while (!ended_) {
    const double left =
        std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) return false;
    receive(left);
  }
  return true;
}

}  // namespace tandem
