// Encoding and decoding of the typed messages (layout in messages.h).
//
// Each message is a header, then its fields as message_fields.h lists them:
// encode() and decode() walk that one list (field_codec.h). After reading,
// check() tests what a field's neighbours make checkable (a block's γ
// against its tokens, runs against entries, enum values, counts that must
// not be negative), so that a worker never indexes past a vector a corrupt
// message sized; then no byte may be left over.
#include "cluster/wire/messages.h"

#include <array>
#include <limits>
#include <string>

#include "cluster/wire/field_codec.h"
#include "common/error.h"
#include "transport/wire_format.h"
#include "workers/speculation/logprob_rows.h"

namespace tandem::wire {

namespace {

constexpr std::array<uint8_t, 4> kMagic = {'T', 'N', 'D', 'M'};
constexpr size_t kPayloadLengthOffset = 8;  // after magic, version and type

// A switch without default: a new MessageType that is not listed here is a
// compile warning (an error with -Werror), not a type decoders reject.
bool is_known_type(uint16_t type) {
  switch (static_cast<MessageType>(type)) {
    case MessageType::draft_step:
    case MessageType::draft_reply:
    case MessageType::q_rows:
    case MessageType::target_step:
    case MessageType::target_result:
    case MessageType::shutdown:
    case MessageType::worker_ready:
      return true;
  }
  return false;
}

// The type each message struct is sent as (a struct without one here does
// not compile as a message).
constexpr MessageType type_of(const DraftStep&) { return MessageType::draft_step; }
constexpr MessageType type_of(const DraftReply&) { return MessageType::draft_reply; }
constexpr MessageType type_of(const QRows&) { return MessageType::q_rows; }
constexpr MessageType type_of(const TargetStep&) { return MessageType::target_step; }
constexpr MessageType type_of(const TargetResult&) { return MessageType::target_result; }
constexpr MessageType type_of(const Shutdown&) { return MessageType::shutdown; }
constexpr MessageType type_of(const WorkerReady&) { return MessageType::worker_ready; }

// ---- header -----------------------------------------------------------------

ByteWriter start(MessageType type) {
  ByteWriter writer;
  for (uint8_t byte : kMagic) writer.u8(byte);
  writer.u16(kFormatVersion);
  writer.u16(static_cast<uint16_t>(type));
  writer.u32(0);  // payload length, patched by finish()
  return writer;
}

Bytes finish(ByteWriter& writer) {
  const size_t payload = writer.size() - (kPayloadLengthOffset + 4);
  require(payload <= std::numeric_limits<uint32_t>::max(), ErrorKind::invalid_argument, [&] {
    return "transport message payload of " + std::to_string(payload) +
           " bytes exceeds the 4 GiB wire limit; send fewer sessions per step";
  });
  writer.patch_u32(kPayloadLengthOffset, static_cast<uint32_t>(payload));
  return writer.take();
}

// Reads and checks the header; returns the type it names (a known one).
MessageType read_header(ByteReader& reader) {
  for (size_t i = 0; i < kMagic.size(); ++i) {
    if (reader.u8("magic") != kMagic[i]) {
      reader.fail("magic", "not a Tandem transport message (magic is not \"TNDM\")");
    }
  }
  const uint16_t version = reader.u16("version");
  if (version != kFormatVersion) {
    reader.fail("version", "message has format version " + std::to_string(version) +
                               " but this build reads version " + std::to_string(kFormatVersion) +
                               "; run the same Tandem build on every rank");
  }
  const uint16_t type = reader.u16("type");
  if (!is_known_type(type)) reader.fail("type", "unknown message type " + std::to_string(type));
  const uint32_t length = reader.u32("payload length");
  if (length != reader.remaining()) {
    reader.fail("payload length", "header says " + std::to_string(length) + " bytes but " +
                                      std::to_string(reader.remaining()) + " follow");
  }
  return static_cast<MessageType>(type);
}

// The reader for decoding `expected`, positioned after a checked header.
ByteReader open(std::span<const std::byte> bytes, MessageType expected) {
  ByteReader reader(bytes, message_name(expected));
  const MessageType actual = read_header(reader);
  if (actual != expected) {
    reader.fail("type", std::string("message is a ") + message_name(actual) + ", expected a " +
                            message_name(expected));
  }
  return reader;
}

// ---- what fields imply about each other ---------------------------------------------

void require_non_negative(ByteReader& reader, const char* field, int64_t value) {
  if (value < 0) reader.fail(field, "is " + std::to_string(value) + ", must not be negative");
}

void check_fault(ByteReader& reader, const char* field, SessionFault fault) {
  const auto value = static_cast<uint8_t>(fault);
  if (value > kLastSessionFault) reader.fail(field, "unknown value " + std::to_string(value));
}

// A coupling the sender could have sent (sampling_params.h): anything else
// is corruption, refused here rather than verified by chance.
void check_coupling(ByteReader& reader, const char* field, Coupling coupling) {
  if (coupling != Coupling::rejection && coupling != Coupling::gumbel)
    reader.fail(field, "unknown value " + std::to_string(static_cast<int>(coupling)));
}

// Messages without relations between their fields.
void check(ByteReader&, const Shutdown&) {}
void check(ByteReader&, const WorkerReady&) {}

void check(ByteReader& reader, const DraftReply& message) {
  if (message.faults.size() != message.tokens.size()) {
    reader.fail("faults", std::to_string(message.faults.size()) + " faults for " +
                              std::to_string(message.tokens.size()) + " proposals");
  }
  for (SessionFault fault : message.faults) check_fault(reader, "faults", fault);
  if (message.prefix_hits > message.prefix_queries) {
    reader.fail("prefix_hits", std::to_string(message.prefix_hits) + " tokens found of " +
                                   std::to_string(message.prefix_queries) + " looked up");
  }
}

void check(ByteReader& reader, const DraftStep& message) {
  for (const DraftStep::Entry& entry : message.entries) {
    require_non_negative(reader, "entries.known", entry.known);
    require_non_negative(reader, "entries.gamma", entry.gamma);
    check_coupling(reader, "entries.sampling.coupling", entry.sampling.coupling);
    if (entry.processing.size() > 1) reader.fail("entries.processing", "more than one entry");
  }
}

void check(ByteReader& reader, const QRows& message) {
  require_non_negative(reader, "vocab", message.vocab);
  for (const QRows::Entry& entry : message.entries)
    require_non_negative(reader, "entries.rows", entry.rows);
  size_t in_runs = 0;
  for (int32_t run : message.runs) {
    if (run <= 0) reader.fail("runs", "a run of " + std::to_string(run) + " entries");
    in_runs += static_cast<size_t>(run);
  }
  if (in_runs != message.entries.size()) {
    reader.fail("runs", "cover " + std::to_string(in_runs) + " entries of " +
                            std::to_string(message.entries.size()));
  }
}

// What one sequence's fields imply about each other.
void check_sequence(ByteReader& reader, const TargetStep::Sequence& sequence) {
  const auto q_source = static_cast<uint8_t>(sequence.q_source);
  if (sequence.q_source != QSource::one_hot && sequence.q_source != QSource::draft_rank)
    reader.fail("sequences.q_source", "unknown value " + std::to_string(q_source));
  const auto tokens = static_cast<int64_t>(sequence.tokens.size());
  require_non_negative(reader, "sequences.start", sequence.start);
  require_non_negative(reader, "sequences.logit_count", sequence.logit_count);
  require_non_negative(reader, "sequences.gamma", sequence.gamma);
  require_non_negative(reader, "sequences.q_first_row", sequence.q_first_row);
  check_coupling(reader, "sequences.sampling.coupling", sequence.sampling.coupling);
  if (sequence.logit_count > tokens) {
    reader.fail("sequences.logit_count", std::to_string(sequence.logit_count) +
                                             " logits asked for " + std::to_string(tokens) + " tokens");
  }
  if (sequence.processing.size() > 1) reader.fail("sequences.processing", "more than one entry");
  if (sequence.gamma > tokens) {
    reader.fail("sequences.gamma", std::to_string(sequence.gamma) + " drafts but only " +
                                       std::to_string(tokens) + " tokens");
  }
  if (sequence.verify && sequence.logit_count < sequence.gamma + 1) {
    reader.fail("sequences.logit_count", std::to_string(sequence.logit_count) +
                                             " logits rows for a block of " +
                                             std::to_string(sequence.gamma) + " drafts");
  }
  if (sequence.logprobs < -1 || sequence.logprobs > kMaxTopLogprobs)
    reader.fail("sequences.logprobs", "is " + std::to_string(sequence.logprobs) + ", must be in [-1, " +
                                          std::to_string(kMaxTopLogprobs) + "]");
  require_non_negative(reader, "sequences.table_from", sequence.table_from);
  for (int32_t block : sequence.table) require_non_negative(reader, "sequences.table", block);
  if (static_cast<int64_t>(sequence.scored.size()) > sequence.logit_count) {
    reader.fail("sequences.scored", std::to_string(sequence.scored.size()) +
                                        " prompt tokens to score with " +
                                        std::to_string(sequence.logit_count) + " logits rows");
  }
}

void check(ByteReader& reader, const TargetStep& message) {
  for (const TargetStep::Sequence& sequence : message.sequences) check_sequence(reader, sequence);
  if (message.truncated_lengths.size() != message.truncated.size()) {
    reader.fail("truncated_lengths", std::to_string(message.truncated_lengths.size()) +
                                         " lengths for " + std::to_string(message.truncated.size()) +
                                         " truncated sequences");
  }
  for (int32_t length : message.truncated_lengths) require_non_negative(reader, "truncated_lengths", length);
}

void check(ByteReader& reader, const TargetResult& message) {
  for (const TargetResult::Outcome& outcome : message.outcomes) {
    require_non_negative(reader, "outcomes.accepted", outcome.accepted);
    require_non_negative(reader, "outcomes.beta_count", outcome.beta_count);
    check_fault(reader, "outcomes.fault", outcome.fault);
    if (!outcome.logprobs.empty() &&
        outcome.logprobs.size() != static_cast<size_t>(outcome.accepted) + 1) {
      reader.fail("outcomes.logprobs", std::to_string(outcome.logprobs.size()) +
                                           " scores for a block that emits " +
                                           std::to_string(outcome.accepted + 1) + " tokens");
    }
  }
}

// What only a bug in the sender makes: refused before anything is written.
void check_sendable(const TargetStep& message) {
  for (const TargetStep::Sequence& sequence : message.sequences) {
    require(sequence.q_source != QSource::local, ErrorKind::internal, [&] {
      return "TargetStep: session " + std::to_string(sequence.session) +
             " has q rows in this process's memory (q_source local), which cannot be sent";
    });
  }
}
template <class M>
void check_sendable(const M&) {}

// ---- both directions, from the field lists ------------------------------------------

template <class M>
Bytes encode_message(const M& message) {
  check_sendable(message);
  ByteWriter writer = start(type_of(message));
  FieldWriter fields_out(writer);
  fields(fields_out, message);
  return finish(writer);
}

template <class M>
M decode_message(std::span<const std::byte> bytes) {
  M message;
  ByteReader reader = open(bytes, type_of(message));
  FieldReader fields_in(reader);
  fields(fields_in, message);
  check(reader, message);
  reader.expect_end();
  return message;
}

}  // namespace

const char* message_name(MessageType type) {
  switch (type) {
    case MessageType::draft_step: return "DraftStep";
    case MessageType::draft_reply: return "DraftReply";
    case MessageType::q_rows: return "QRows";
    case MessageType::target_step: return "TargetStep";
    case MessageType::target_result: return "TargetResult";
    case MessageType::shutdown: return "Shutdown";
    case MessageType::worker_ready: return "WorkerReady";
  }
  return "unknown message";  // a value outside the enum (from a cast)
}

Tag message_tag(MessageType type) {
  switch (type) {
    case MessageType::draft_step: return Tag::draft_step;
    case MessageType::draft_reply: return Tag::draft_reply;
    case MessageType::q_rows: return Tag::q_rows;
    case MessageType::target_step: return Tag::target_step;
    case MessageType::target_result: return Tag::target_result;
    case MessageType::shutdown: return Tag::shutdown;
    case MessageType::worker_ready: return Tag::worker_ready;
  }
  throw Error(ErrorKind::internal, "message_tag: a value outside MessageType");
}

MessageType peek_type(std::span<const std::byte> bytes) {
  ByteReader reader(bytes, "transport message");
  return read_header(reader);
}

Bytes encode(const DraftStep& message) { return encode_message(message); }
Bytes encode(const DraftReply& message) { return encode_message(message); }
Bytes encode(const QRows& message) { return encode_message(message); }
Bytes encode(const TargetStep& message) { return encode_message(message); }
Bytes encode(const TargetResult& message) { return encode_message(message); }
Bytes encode(const Shutdown& message) { return encode_message(message); }
Bytes encode(const WorkerReady& message) { return encode_message(message); }

DraftStep decode_draft_step(std::span<const std::byte> bytes) {
  return decode_message<DraftStep>(bytes);
}
DraftReply decode_draft_reply(std::span<const std::byte> bytes) {
  return decode_message<DraftReply>(bytes);
}
QRows decode_q_rows(std::span<const std::byte> bytes) { return decode_message<QRows>(bytes); }
TargetStep decode_target_step(std::span<const std::byte> bytes) {
  return decode_message<TargetStep>(bytes);
}
TargetResult decode_target_result(std::span<const std::byte> bytes) {
  return decode_message<TargetResult>(bytes);
}
Shutdown decode_shutdown(std::span<const std::byte> bytes) {
  return decode_message<Shutdown>(bytes);
}
WorkerReady decode_worker_ready(std::span<const std::byte> bytes) {
  return decode_message<WorkerReady>(bytes);
}

}  // namespace tandem::wire
