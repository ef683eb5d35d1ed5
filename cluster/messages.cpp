// Encoding and decoding of the typed messages (layout in messages.h).
//
// Each message is a header then its fields in declaration order. Decoders
// check, beyond what ByteReader checks per field, what a field's neighbours
// make checkable (a block's γ against its tokens, q rows against the vocab),
// so that a worker never indexes past a vector a corrupt message sized.
#include "cluster/messages.h"

#include <array>
#include <limits>
#include <string>

#include "common/error.h"
#include "transport/wire_format.h"

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

// ---- shared field groups ------------------------------------------------------

void write_sampling(ByteWriter& writer, const SamplingParams& sampling) {
  writer.f32(sampling.temperature);
  writer.i32(static_cast<int32_t>(sampling.top_k));
  writer.f32(sampling.top_p);
  writer.u64(sampling.seed);
}

SamplingParams read_sampling(ByteReader& reader) {
  SamplingParams sampling;
  sampling.temperature = reader.f32("sampling.temperature");
  sampling.top_k = reader.i32("sampling.top_k");
  sampling.top_p = reader.f32("sampling.top_p");
  sampling.seed = reader.u64("sampling.seed");
  return sampling;
}

void require_non_negative(ByteReader& reader, const char* field, int64_t value) {
  if (value < 0) reader.fail(field, "is " + std::to_string(value) + ", must not be negative");
}

// ---- elements of vectors ----------------------------------------------------------

void write_draft_entry(ByteWriter& writer, const DraftStep::Entry& entry) {
  writer.u64(entry.session);
  writer.i32(entry.known);
  writer.i32s(entry.new_tokens);
  writer.i32(entry.gamma);
  write_sampling(writer, entry.sampling);
}

void write_q_entry(ByteWriter& writer, const QRows::Entry& entry) {
  writer.u64(entry.session);
  writer.i32(entry.rows);
}

void write_sequence(ByteWriter& writer, const TargetStep::Sequence& sequence) {
  writer.i64(sequence.seq);
  writer.i32(sequence.start);
  writer.i32s(sequence.tokens);
  writer.i32(sequence.logit_count);
  writer.boolean(sequence.verify);
  writer.i32(sequence.gamma);
  write_sampling(writer, sequence.sampling);
  writer.i64(sequence.first_position);
  writer.f32(sequence.lenience);
  writer.u64(sequence.session);
  require(sequence.q_source != QSource::local, ErrorKind::internal, [&] {
    return "TargetStep: session " + std::to_string(sequence.session) +
           " has q rows in this process's memory (q_source local), which cannot be sent";
  });
  writer.u8(static_cast<uint8_t>(sequence.q_source));
  writer.u64(sequence.q_step);
  writer.i32(sequence.q_first_row);
}

void write_outcome(ByteWriter& writer, const TargetResult::Outcome& outcome) {
  writer.i32(outcome.accepted);
  writer.i32(outcome.token);
  writer.f64(outcome.beta_sum);
  writer.i32(outcome.beta_count);
}

// The smallest encoded size of an element: that of a default one, whose
// vectors are empty. Decoders check a vector's count against it before
// reserving, so a corrupt count fails before it allocates. Measured, not
// written down, so that it follows the element's fields when they change.
template <typename Element>
size_t min_encoded_size(void (*write)(ByteWriter&, const Element&)) {
  ByteWriter writer;
  write(writer, Element{});
  return writer.size();
}

// ---- DraftStep ------------------------------------------------------------------

DraftStep::Entry read_draft_entry(ByteReader& reader) {
  DraftStep::Entry entry;
  entry.session = reader.u64("entries.session");
  entry.known = reader.i32("entries.known");
  require_non_negative(reader, "entries.known", entry.known);
  entry.new_tokens = reader.i32s("entries.new_tokens");
  entry.gamma = reader.i32("entries.gamma");
  require_non_negative(reader, "entries.gamma", entry.gamma);
  entry.sampling = read_sampling(reader);
  return entry;
}

// ---- TargetStep -----------------------------------------------------------------

QSource read_q_source(ByteReader& reader) {
  const uint8_t value = reader.u8("sequences.q_source");
  if (value != static_cast<uint8_t>(QSource::one_hot) &&
      value != static_cast<uint8_t>(QSource::draft_rank)) {
    reader.fail("sequences.q_source", "unknown value " + std::to_string(value));
  }
  return static_cast<QSource>(value);
}

// What one sequence's fields imply about each other.
void check_sequence(ByteReader& reader, const TargetStep::Sequence& sequence) {
  const auto tokens = static_cast<int64_t>(sequence.tokens.size());
  require_non_negative(reader, "sequences.start", sequence.start);
  require_non_negative(reader, "sequences.logit_count", sequence.logit_count);
  require_non_negative(reader, "sequences.gamma", sequence.gamma);
  require_non_negative(reader, "sequences.q_first_row", sequence.q_first_row);
  if (sequence.logit_count > tokens) {
    reader.fail("sequences.logit_count", std::to_string(sequence.logit_count) +
                                             " logits asked for " + std::to_string(tokens) + " tokens");
  }
  if (sequence.gamma > tokens) {
    reader.fail("sequences.gamma", std::to_string(sequence.gamma) + " drafts but only " +
                                       std::to_string(tokens) + " tokens");
  }
}

TargetStep::Sequence read_sequence(ByteReader& reader) {
  TargetStep::Sequence sequence;
  sequence.seq = reader.i64("sequences.seq");
  sequence.start = reader.i32("sequences.start");
  sequence.tokens = reader.i32s("sequences.tokens");
  sequence.logit_count = reader.i32("sequences.logit_count");
  sequence.verify = reader.boolean("sequences.verify");
  sequence.gamma = reader.i32("sequences.gamma");
  sequence.sampling = read_sampling(reader);
  sequence.first_position = reader.i64("sequences.first_position");
  sequence.lenience = reader.f32("sequences.lenience");
  sequence.session = reader.u64("sequences.session");
  sequence.q_source = read_q_source(reader);
  sequence.q_step = reader.u64("sequences.q_step");
  sequence.q_first_row = reader.i32("sequences.q_first_row");
  check_sequence(reader, sequence);
  return sequence;
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

MessageType peek_type(std::span<const std::byte> bytes) {
  ByteReader reader(bytes, "transport message");
  return read_header(reader);
}

// ---- encoders -------------------------------------------------------------------

Bytes encode(const DraftStep& message) {
  ByteWriter writer = start(MessageType::draft_step);
  writer.u64(message.step);
  writer.count(message.entries.size());
  for (const DraftStep::Entry& entry : message.entries) write_draft_entry(writer, entry);
  writer.u64s(message.released);
  return finish(writer);
}

Bytes encode(const DraftReply& message) {
  ByteWriter writer = start(MessageType::draft_reply);
  writer.u64(message.step);
  writer.count(message.tokens.size());
  for (const std::vector<int32_t>& drafts : message.tokens) writer.i32s(drafts);
  writer.f64(message.seconds);
  return finish(writer);
}

Bytes encode(const QRows& message) {
  ByteWriter writer = start(MessageType::q_rows);
  writer.u64(message.step);
  writer.i32(message.vocab);
  writer.count(message.entries.size());
  for (const QRows::Entry& entry : message.entries) write_q_entry(writer, entry);
  writer.i32s(message.runs);
  return finish(writer);
}

Bytes encode(const TargetStep& message) {
  ByteWriter writer = start(MessageType::target_step);
  writer.u64(message.step);
  writer.count(message.sequences.size());
  for (const TargetStep::Sequence& sequence : message.sequences) write_sequence(writer, sequence);
  writer.i64s(message.released);
  writer.i64s(message.truncated);
  writer.i32s(message.truncated_lengths);
  return finish(writer);
}

Bytes encode(const TargetResult& message) {
  ByteWriter writer = start(MessageType::target_result);
  writer.u64(message.step);
  writer.count(message.outcomes.size());
  for (const TargetResult::Outcome& outcome : message.outcomes) write_outcome(writer, outcome);
  writer.f64(message.forward_seconds);
  writer.f64(message.communication_seconds);
  return finish(writer);
}

Bytes encode(const WorkerReady& message) {
  ByteWriter writer = start(MessageType::worker_ready);
  writer.i32(message.rank);
  writer.i64(message.bytes_read);
  writer.i64(message.resident_bytes);
  writer.f64(message.load_seconds);
  return finish(writer);
}

Bytes encode(const Shutdown& message) {
  ByteWriter writer = start(MessageType::shutdown);
  writer.i32(message.exit_code);
  writer.string(message.reason);
  return finish(writer);
}

// ---- decoders -------------------------------------------------------------------

DraftStep decode_draft_step(std::span<const std::byte> bytes) {
  ByteReader reader = open(bytes, MessageType::draft_step);
  DraftStep message;
  message.step = reader.u64("step");
  const uint32_t entries = reader.count("entries", min_encoded_size(write_draft_entry));
  message.entries.reserve(entries);
  for (uint32_t i = 0; i < entries; ++i) message.entries.push_back(read_draft_entry(reader));
  message.released = reader.u64s("released");
  reader.expect_end();
  return message;
}

DraftReply decode_draft_reply(std::span<const std::byte> bytes) {
  ByteReader reader = open(bytes, MessageType::draft_reply);
  DraftReply message;
  message.step = reader.u64("step");
  // Each row of drafts is at least its own u32 count.
  const uint32_t entries = reader.count("tokens", sizeof(uint32_t));
  message.tokens.reserve(entries);
  for (uint32_t i = 0; i < entries; ++i) message.tokens.push_back(reader.i32s("tokens"));
  message.seconds = reader.f64("seconds");
  reader.expect_end();
  return message;
}

QRows decode_q_rows(std::span<const std::byte> bytes) {
  ByteReader reader = open(bytes, MessageType::q_rows);
  QRows message;
  message.step = reader.u64("step");
  message.vocab = reader.i32("vocab");
  require_non_negative(reader, "vocab", message.vocab);
  const uint32_t entries = reader.count("entries", min_encoded_size(write_q_entry));
  message.entries.reserve(entries);
  for (uint32_t i = 0; i < entries; ++i) {
    QRows::Entry entry;
    entry.session = reader.u64("entries.session");
    entry.rows = reader.i32("entries.rows");
    require_non_negative(reader, "entries.rows", entry.rows);
    message.entries.push_back(entry);
  }
  message.runs = reader.i32s("runs");
  size_t in_runs = 0;
  for (int32_t run : message.runs) {
    if (run <= 0) reader.fail("runs", "a run of " + std::to_string(run) + " entries");
    in_runs += static_cast<size_t>(run);
  }
  if (in_runs != message.entries.size()) {
    reader.fail("runs", "cover " + std::to_string(in_runs) + " entries of " +
                            std::to_string(message.entries.size()));
  }
  reader.expect_end();
  return message;
}

TargetStep decode_target_step(std::span<const std::byte> bytes) {
  ByteReader reader = open(bytes, MessageType::target_step);
  TargetStep message;
  message.step = reader.u64("step");
  const uint32_t sequences = reader.count("sequences", min_encoded_size(write_sequence));
  message.sequences.reserve(sequences);
  for (uint32_t i = 0; i < sequences; ++i) message.sequences.push_back(read_sequence(reader));
  message.released = reader.i64s("released");
  message.truncated = reader.i64s("truncated");
  message.truncated_lengths = reader.i32s("truncated_lengths");
  if (message.truncated_lengths.size() != message.truncated.size()) {
    reader.fail("truncated_lengths", std::to_string(message.truncated_lengths.size()) +
                                         " lengths for " + std::to_string(message.truncated.size()) +
                                         " truncated sequences");
  }
  for (int32_t length : message.truncated_lengths) require_non_negative(reader, "truncated_lengths", length);
  reader.expect_end();
  return message;
}

TargetResult decode_target_result(std::span<const std::byte> bytes) {
  ByteReader reader = open(bytes, MessageType::target_result);
  TargetResult message;
  message.step = reader.u64("step");
  const uint32_t outcomes = reader.count("outcomes", min_encoded_size(write_outcome));
  message.outcomes.reserve(outcomes);
  for (uint32_t i = 0; i < outcomes; ++i) {
    TargetResult::Outcome outcome;
    outcome.accepted = reader.i32("outcomes.accepted");
    require_non_negative(reader, "outcomes.accepted", outcome.accepted);
    outcome.token = reader.i32("outcomes.token");
    outcome.beta_sum = reader.f64("outcomes.beta_sum");
    outcome.beta_count = reader.i32("outcomes.beta_count");
    require_non_negative(reader, "outcomes.beta_count", outcome.beta_count);
    message.outcomes.push_back(outcome);
  }
  message.forward_seconds = reader.f64("forward_seconds");
  message.communication_seconds = reader.f64("communication_seconds");
  reader.expect_end();
  return message;
}

Shutdown decode_shutdown(std::span<const std::byte> bytes) {
  ByteReader reader = open(bytes, MessageType::shutdown);
  Shutdown message;
  message.exit_code = reader.i32("exit_code");
  message.reason = reader.string("reason");
  reader.expect_end();
  return message;
}

WorkerReady decode_worker_ready(std::span<const std::byte> bytes) {
  ByteReader reader = open(bytes, MessageType::worker_ready);
  WorkerReady message;
  message.rank = reader.i32("rank");
  message.bytes_read = reader.i64("bytes_read");
  message.resident_bytes = reader.i64("resident_bytes");
  message.load_seconds = reader.f64("load_seconds");
  reader.expect_end();
  return message;
}

}  // namespace tandem::wire
