// The typed messages that pass between roles, and their wire format.
//
// One step of the engine (DESIGN.md, "One step"):
//   coordinator → draft rank      DraftStep     sessions to draft for, γ each
//   draft rank  → coordinator     DraftReply    the drafted tokens
//   draft rank  → target rank 0   QRows         which sampled sessions' q rows follow
//                                 (the rows themselves: floats on the q link,
//                                 device to device with NCCL)
//   coordinator → every TP rank   TargetStep    the ragged batch to verify
//   target rank 0 → coordinator   TargetResult  n, t and β per block
//   coordinator → every worker    Shutdown      leave the serving loop
// and once, at start:
//   every worker → coordinator    WorkerReady   model loaded, what it cost
//
// Encoding: a header (magic "TNDM", format version, message type, payload
// length) then the fields in declaration order, little-endian, vectors as a
// u32 count then elements. decode_* checks everything it reads (header,
// type, lengths, enum values, trailing bytes) and throws
// Error(corrupt_data) naming the message and field: a truncated or
// malformed message is an error, never undefined behaviour.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "kernels/sampling_params.h"
#include "transport/communicator.h"

namespace tandem::wire {

// 2: TargetStep sequences name their QRows; 3: TargetStep carries truncations;
// 4: QRows carries row counts, the rows follow apart; no inline q rows
constexpr uint16_t kFormatVersion = 4;

enum class MessageType : uint16_t {
  draft_step = 1,
  draft_reply = 2,
  q_rows = 3,
  target_step = 4,
  target_result = 5,
  shutdown = 6,
  worker_ready = 7,
};
const char* message_name(MessageType type);

// Point-to-point tags: one per message type, so a rank waiting for one kind
// never takes another.
inline int tag_of(MessageType type) { return static_cast<int>(type); }

struct DraftStep {
  uint64_t step = 0;
  struct Entry {
    uint64_t session = 0;
    int32_t known = 0;                // committed tokens the draft rank already holds
    std::vector<int32_t> new_tokens;  // committed tokens after those
    int32_t gamma = 0;                // drafts wanted
    SamplingParams sampling;
  };
  std::vector<Entry> entries;
  std::vector<uint64_t> released;  // sessions that ended (before drafting)
};

struct DraftReply {
  uint64_t step = 0;
  std::vector<std::vector<int32_t>> tokens;  // per DraftStep entry, x_1..x_γ'
  double seconds = 0;                        // the draft rank's propose() time
};

// Which standardized draft rows q_1..q_γ' one draft step produced for its
// sampled sessions. The rows themselves follow on the q link, the entries'
// rows side by side in entry order, in runs of consecutive entries (one
// transfer each: runs[i] entries' rows × vocab floats), the receiver
// putting them side by side again (coordinator/cluster/q_rows_link.h):
// over NCCL they go from the draft GPU to the target GPU without touching
// either host.
// A QRows with no entries ends the stream: the draft rank sends one after
// Shutdown, and whoever takes its rows takes them until then, because a
// large send waits for its receiver and rows nobody needed would keep the
// draft rank (and so the job) from finishing.
struct QRows {
  uint64_t step = 0;
  int32_t vocab = 0;
  struct Entry {
    uint64_t session = 0;
    int32_t rows = 0;  // γ'
  };
  std::vector<Entry> entries;
  std::vector<int32_t> runs;  // entries per transfer, Σ = entries.size(); each > 0
};

// Where the q rows of a verified block come from. (1 was rows inline in
// the message, before they went over the q rows link; it is not used.)
enum class QSource : uint8_t {
  one_hot = 0,     // deterministic drafter or greedy session: q_j one-hot at x_j
  draft_rank = 2,  // in the QRows of draft step q_step, over the q rows link
  // In the verifying process's memory, handed to the executor beside the
  // message (TargetExecutor::run). Never on the wire: the coordinator sends
  // such rows to a remote target over the q rows link, as draft_rank.
  local = 3,
};

struct TargetStep {
  uint64_t step = 0;
  struct Sequence {
    int64_t seq = 0;                // the coordinator's KV sequence id
    int32_t start = 0;              // cached positions kept (truncate to this first)
    std::vector<int32_t> tokens;    // new tokens: chunk or catch-up, then the drafts
    int32_t logit_count = 0;        // logits for the last logit_count tokens
    // Verification (when verify): the last `gamma` tokens are the drafts.
    bool verify = false;
    int32_t gamma = 0;
    SamplingParams sampling;
    int64_t first_position = 0;     // absolute position of x_1
    float lenience = 1.0f;
    uint64_t session = 0;           // matches QRows entries
    QSource q_source = QSource::one_hot;
    // q_source draft_rank: the draft step whose QRows hold this block's rows,
    // from row q_first_row on (a block drafted ahead behind its guessed
    // bonus token starts at row 1). Draft steps that were drafted but never
    // verified (a missed guess, a session that ended) leave QRows no step
    // names; target rank 0 drops them once a later step is named.
    uint64_t q_step = 0;
    int32_t q_first_row = 0;
  };
  std::vector<Sequence> sequences;
  std::vector<int64_t> released;   // KV sequences to free before this step
  // Sequences the coordinator truncated since the last step (rejected
  // drafts) and their new lengths, applied after `released` and before any
  // reservation: the blocks a truncation freed on the coordinator may hold
  // another sequence's tokens in this step, also when the truncated
  // sequence itself sits the step out.
  std::vector<int64_t> truncated;
  std::vector<int32_t> truncated_lengths;  // one per truncated sequence
};

struct TargetResult {
  uint64_t step = 0;
  struct Outcome {
    int32_t accepted = 0;  // n
    int32_t token = 0;     // t
    double beta_sum = 0;   // Σ β_j over the block's drafts
    int32_t beta_count = 0;
  };
  std::vector<Outcome> outcomes;     // one per verifying sequence, in step order
  double forward_seconds = 0;        // the sharded forward pass on target rank 0
  double communication_seconds = 0;  // of which waiting in collectives
};

struct Shutdown {
  int32_t exit_code = 0;
  std::string reason;
};

// A worker's model is loaded: what its share of the weights cost.
struct WorkerReady {
  int32_t rank = 0;
  int64_t bytes_read = 0;      // checkpoint bytes this rank read (its slices only)
  int64_t resident_bytes = 0;  // the process's resident memory after loading
  double load_seconds = 0;
};

Bytes encode(const DraftStep& message);
Bytes encode(const DraftReply& message);
Bytes encode(const QRows& message);
Bytes encode(const TargetStep& message);
Bytes encode(const TargetResult& message);
Bytes encode(const Shutdown& message);
Bytes encode(const WorkerReady& message);

// The type named in a message's header (checked: magic, version, length).
MessageType peek_type(std::span<const std::byte> bytes);

DraftStep decode_draft_step(std::span<const std::byte> bytes);
DraftReply decode_draft_reply(std::span<const std::byte> bytes);
QRows decode_q_rows(std::span<const std::byte> bytes);
TargetStep decode_target_step(std::span<const std::byte> bytes);
TargetResult decode_target_result(std::span<const std::byte> bytes);
Shutdown decode_shutdown(std::span<const std::byte> bytes);
WorkerReady decode_worker_ready(std::span<const std::byte> bytes);

}  // namespace tandem::wire
