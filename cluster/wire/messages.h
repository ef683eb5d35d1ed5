// The typed messages that pass between roles, and their wire format.
//
// One step of the engine (docs/design.md, "One step"); TargetStep,
// TargetResult and QRows are the engine's own structs (target_step.h):
//   coordinator → draft rank      DraftStep     sessions to draft for, γ each
//   draft rank  → coordinator     DraftReply    the drafted tokens
//   draft rank  → target rank 0   QRows         which sampled sessions' q rows follow
//                                 (the rows themselves: floats on the q link,
//                                 device to device with NCCL)
//   coordinator → every TP rank   TargetStep    the ragged batch to verify
//   target rank 0 → coordinator   TargetResult  n, t and β per block (and logprobs)
//   coordinator → every worker    Shutdown      leave the serving loop
// and once, at start:
//   every worker → coordinator    WorkerReady   model loaded, what it cost
//
// Encoding: a header (magic "TNDM", format version, message type, payload
// length) then the fields in the order message_fields.h declares them (the
// one list that both encode and decode walk), little-endian, vectors as a
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
#include "transport/tags.h"
#include "workers/speculation/target_step.h"

namespace tandem::wire {

using tandem::QRows;
using tandem::QSource;
using tandem::SessionFault;
using tandem::TargetResult;
using tandem::TargetStep;
using tandem::TokenLogprob;

// 2: TargetStep sequences name their QRows; 3: TargetStep carries truncations;
// 4: QRows carries row counts, the rows follow apart; no inline q rows;
// 5: DraftReply and TargetResult carry each session's own fault;
// 6: min_p, logit processing (and a TargetStep's history) for sessions that ask;
//    logprobs: TargetStep sequences ask (logprobs, scored), TargetResult carries them
// 7: SamplingParams carries the coupling (rejection or gumbel)
// 8: prefix caching: TargetStep sequences carry the coordinator's block table
//    (table_from, table); DraftStep entries their cache_salt; DraftReply the
//    draft rank's prefix cache counters
constexpr uint16_t kFormatVersion = 8;

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

// The tag of each message type (transport/tags.h), so a rank waiting for
// one kind never takes another; as the int a Communicator takes. Commands
// to a worker travel with Tag::command instead (cluster/links/peer_channel.h).
Tag message_tag(MessageType type);
inline int tag_of(MessageType type) { return tag_value(message_tag(type)); }

struct DraftStep {
  uint64_t step = 0;
  struct Entry {
    uint64_t session = 0;
    int32_t known = 0;                // committed tokens the draft rank already holds
    std::vector<int32_t> new_tokens;  // committed tokens after those
    int32_t gamma = 0;                // drafts wanted
    SamplingParams sampling;
    std::vector<LogitProcessing> processing = {};  // one entry for a session that asks, else none
    uint64_t cache_salt = 0;  // the request's (cache_salt_hash; 0: none), for the draft's prefix cache
  };
  std::vector<Entry> entries;
  std::vector<uint64_t> released;  // sessions that ended (before drafting)
};

struct DraftReply {
  uint64_t step = 0;
  std::vector<std::vector<int32_t>> tokens;  // per DraftStep entry, x_1..x_γ'
  double seconds = 0;                        // the draft rank's propose() time
  // Per DraftStep entry: the session's own fault (none, or why it has no
  // tokens), which ends that session alone on the coordinator.
  std::vector<SessionFault> faults;
  // The draft rank's prefix cache since it started (PrefixCacheCounters):
  // tokens looked up and found cached. Zero when its cache has none.
  uint64_t prefix_queries = 0;
  uint64_t prefix_hits = 0;
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
