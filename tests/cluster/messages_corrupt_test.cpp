// Malformed messages are rejected with Error(corrupt_data) naming the
// message and field: truncated at every length, bad header fields, the
// wrong decoder, fields inconsistent with each other, random corruption.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "common/error.h"
#include "tests/cluster/sample_messages.h"
#include "cluster/wire/messages.h"

namespace tandem::wire {
namespace {

using test_support::encoded_samples;
using testing::AllOf;
using testing::HasSubstr;
using testing::ThrowsMessage;

// Runs f, expecting Error(corrupt_data) whose message holds every part.
template <typename F>
void expect_corrupt(F&& f, std::initializer_list<std::string> parts) {
  try {
    f();
    ADD_FAILURE() << "decoded without error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::corrupt_data) << e.what();
    for (const std::string& part : parts) EXPECT_THAT(e.what(), HasSubstr(part));
  }
}

void set_u32(Bytes& bytes, size_t offset, uint32_t value) {
  for (int i = 0; i < 4; ++i) bytes[offset + i] = static_cast<std::byte>(value >> (8 * i));
}

TEST(MessagesCorrupt, EveryTruncationIsRejectedNamingTheMessage) {
  for (const auto& sample : encoded_samples()) {
    for (size_t length = 0; length < sample.bytes.size(); ++length) {
      SCOPED_TRACE(sample.name + " cut to " + std::to_string(length));
      expect_corrupt([&] { sample.decode(std::span(sample.bytes).first(length)); }, {sample.name});
    }
  }
}

TEST(MessagesCorrupt, BadMagic) {
  for (const auto& sample : encoded_samples()) {
    Bytes bytes = sample.bytes;
    bytes[1] = std::byte{'X'};
    expect_corrupt([&] { sample.decode(bytes); }, {sample.name, "magic"});
    expect_corrupt([&] { peek_type(bytes); }, {"magic"});
  }
}

TEST(MessagesCorrupt, OtherVersionNamesBothVersions) {
  for (const auto& sample : encoded_samples()) {
    Bytes bytes = sample.bytes;
    bytes[4] = std::byte{99};
    expect_corrupt([&] { sample.decode(bytes); }, {sample.name, "version 99", "version " + std::to_string(kFormatVersion)});
  }
}

TEST(MessagesCorrupt, UnknownType) {
  for (const auto& sample : encoded_samples()) {
    Bytes bytes = sample.bytes;
    bytes[6] = std::byte{99};
    expect_corrupt([&] { sample.decode(bytes); }, {sample.name, "unknown message type 99"});
    expect_corrupt([&] { peek_type(bytes); }, {"unknown message type 99"});
  }
}

TEST(MessagesCorrupt, WrongDecoderNamesExpectedAndActual) {
  const auto samples = encoded_samples();
  for (const auto& decoder : samples) {
    for (const auto& message : samples) {
      if (decoder.type == message.type) continue;
      expect_corrupt([&] { decoder.decode(message.bytes); },
                     {"message is a " + message.name, "expected a " + decoder.name});
    }
  }
}

TEST(MessagesCorrupt, PayloadLengthMustMatch) {
  for (const auto& sample : encoded_samples()) {
    Bytes longer = sample.bytes;
    set_u32(longer, 8, static_cast<uint32_t>(sample.bytes.size() - 12 + 1));
    expect_corrupt([&] { sample.decode(longer); }, {sample.name, "payload length"});
    expect_corrupt([&] { peek_type(longer); }, {"payload length"});
  }
}

TEST(MessagesCorrupt, TrailingBytesAreRejected) {
  for (const auto& sample : encoded_samples()) {
    Bytes bytes = sample.bytes;
    bytes.push_back(std::byte{0});
    set_u32(bytes, 8, static_cast<uint32_t>(bytes.size() - 12));
    expect_corrupt([&] { sample.decode(bytes); }, {sample.name, "trailing"});
  }
}

TEST(MessagesCorrupt, HugeCountIsRejected) {
  // DraftReply: header (12), step (8), then the count of token rows.
  Bytes bytes = encode(test_support::sample_draft_reply());
  set_u32(bytes, 20, 0xFFFFFFFFu);
  expect_corrupt([&] { decode_draft_reply(bytes); }, {"DraftReply", "tokens", "4294967295"});
  // Shutdown: header (12), exit_code (4), then the reason's length.
  bytes = encode(test_support::sample_shutdown());
  set_u32(bytes, 16, 0xFFFFFFFFu);
  expect_corrupt([&] { decode_shutdown(bytes); }, {"Shutdown", "reason"});
}

// ---- fields that contradict each other --------------------------------------------

TEST(MessagesCorrupt, TargetStepBoolMustBeZeroOrOne) {
  TargetStep message;
  message.sequences.emplace_back();
  Bytes bytes = encode(message);
  // header 12, step 8, count 4, seq 8, start 4, tokens count 4, logit_count 4
  bytes[44] = std::byte{2};
  expect_corrupt([&] { decode_target_step(bytes); }, {"TargetStep", "sequences.verify"});
}

TEST(MessagesCorrupt, TargetStepQSourceOutOfRange) {
  TargetStep message;
  message.sequences.emplace_back();
  Bytes bytes = encode(message);
  // q_source is the byte before q_step (8), q_first_row (4), the
  // processing and history counts (4 each), logprobs (4), the scored count
  // (4), table_from and the table count (4 each) and the released,
  // truncated and truncated_lengths counts (4 each).
  // 1 (rows inline, retired) and 3 (local, never sent) are not wire values.
  for (uint8_t value : {1, 3, 4}) {
    bytes[bytes.size() - 49] = std::byte{value};
    expect_corrupt([&] { decode_target_step(bytes); }, {"TargetStep", "sequences.q_source"});
  }
  bytes[bytes.size() - 49] = std::byte{2};
  EXPECT_NO_THROW(decode_target_step(bytes));
}

TEST(MessagesCorrupt, SessionFaultsOutOfRangeOrMiscountedAreRejected) {
  TargetResult result;
  result.outcomes.emplace_back();
  Bytes bytes = encode(result);
  // The outcome's fault is the byte before its logprobs count and the
  // prompt_logprobs count (4 each), forward_seconds,
  // communication_seconds and verify_seconds (8 each).
  bytes[bytes.size() - 33] = std::byte{kLastSessionFault + 1};
  expect_corrupt([&] { decode_target_result(bytes); }, {"TargetResult", "outcomes.fault"});
  bytes[bytes.size() - 33] = std::byte{kLastSessionFault};
  EXPECT_NO_THROW(decode_target_result(bytes));

  DraftReply reply;
  reply.tokens = {{1, 2}, {}};
  reply.faults = {SessionFault::none};  // one short
  expect_corrupt([&] { decode_draft_reply(encode(reply)); }, {"DraftReply", "faults", "2 proposals"});
  reply.faults.push_back(SessionFault::nonfinite_draft_logits);
  EXPECT_NO_THROW(decode_draft_reply(encode(reply)));
}

TEST(MessagesCorrupt, CouplingOutOfRangeIsRejected) {
  // The coupling travels as its byte (0 rejection, 1 gumbel); any other
  // value is corruption, in a DraftStep entry and a TargetStep sequence.
  DraftStep draft;
  draft.entries.emplace_back();
  draft.entries[0].sampling.coupling = static_cast<Coupling>(2);
  expect_corrupt([&] { decode_draft_step(encode(draft)); },
                 {"DraftStep", "entries.sampling.coupling", "unknown value 2"});
  draft.entries[0].sampling.coupling = Coupling::gumbel;
  EXPECT_EQ(decode_draft_step(encode(draft)).entries[0].sampling.coupling, Coupling::gumbel);

  TargetStep target;
  target.sequences.emplace_back();
  target.sequences[0].sampling.coupling = static_cast<Coupling>(255);
  expect_corrupt([&] { decode_target_step(encode(target)); },
                 {"TargetStep", "sequences.sampling.coupling", "unknown value 255"});
  target.sequences[0].sampling.coupling = Coupling::gumbel;
  EXPECT_EQ(decode_target_step(encode(target)).sequences[0].sampling.coupling, Coupling::gumbel);
}

TEST(MessagesCorrupt, TargetStepTruncationsNeedOneNonNegativeLengthEach) {
  TargetStep message;
  message.truncated = {3, 4};
  message.truncated_lengths = {10};
  expect_corrupt([&] { decode_target_step(encode(message)); },
                 {"TargetStep", "truncated_lengths", "1 lengths for 2 truncated sequences"});
  message.truncated_lengths = {10, -1};
  expect_corrupt([&] { decode_target_step(encode(message)); }, {"TargetStep", "truncated_lengths"});
}

TEST(MessagesCorrupt, TargetStepBlockTableMustHoldBlockNumbers) {
  // A rank's cache adopts these numbers as they are: a negative one (or a
  // negative first index) is corruption, named before anything adopts it.
  TargetStep message;
  message.sequences.emplace_back();
  TargetStep::Sequence& sequence = message.sequences[0];
  sequence.tokens = {1, 2};
  sequence.table = {4, 9};
  Bytes bytes = encode(message);
  EXPECT_EQ(decode_target_step(bytes).sequences[0].table, (std::vector<int32_t>{4, 9}));
  // The table's last entry is the int before the released, truncated and
  // truncated_lengths counts (4 each).
  for (size_t i = 0; i < 4; ++i) bytes[bytes.size() - 16 + i] = std::byte{0xff};  // -1
  expect_corrupt([&] { decode_target_step(bytes); }, {"TargetStep", "sequences.table", "-1"});
  sequence.table = {4, 9};
  sequence.table_from = -3;
  expect_corrupt([&] { decode_target_step(encode(message)); },
                 {"TargetStep", "sequences.table_from", "-3"});
}

TEST(MessagesCorrupt, DraftReplyCannotFindMoreThanItLookedUp) {
  DraftReply reply;
  reply.prefix_queries = 10;
  reply.prefix_hits = 11;
  expect_corrupt([&] { decode_draft_reply(encode(reply)); },
                 {"DraftReply", "prefix_hits", "11 tokens found of 10"});
  reply.prefix_hits = 10;
  EXPECT_EQ(decode_draft_reply(encode(reply)).prefix_hits, 10u);
}

TEST(MessagesCorrupt, TargetStepQFirstRowMustNotBeNegative) {
  TargetStep message;
  message.sequences.emplace_back();
  message.sequences[0].q_first_row = -1;
  expect_corrupt([&] { decode_target_step(encode(message)); },
                 {"TargetStep", "sequences.q_first_row"});
}

TEST(MessagesCorrupt, TargetStepBlockMustFitItsTokens) {
  TargetStep message;
  message.sequences.emplace_back();
  TargetStep::Sequence& sequence = message.sequences[0];
  sequence.tokens = {1, 2};
  sequence.gamma = 3;
  expect_corrupt([&] { decode_target_step(encode(message)); }, {"TargetStep", "sequences.gamma"});
  sequence.gamma = 2;
  sequence.logit_count = 3;
  expect_corrupt([&] { decode_target_step(encode(message)); }, {"TargetStep", "sequences.logit_count"});
  sequence.logit_count = -1;
  expect_corrupt([&] { decode_target_step(encode(message)); }, {"TargetStep", "sequences.logit_count"});
}

TEST(MessagesCorrupt, LogprobFieldsMustFitTheirRows) {
  TargetStep message;
  message.sequences.emplace_back();
  TargetStep::Sequence& sequence = message.sequences[0];
  sequence.tokens = {1, 2, 3};
  sequence.logit_count = 2;
  sequence.logprobs = 21;
  expect_corrupt([&] { decode_target_step(encode(message)); },
                 {"TargetStep", "sequences.logprobs"});
  sequence.logprobs = -2;
  expect_corrupt([&] { decode_target_step(encode(message)); },
                 {"TargetStep", "sequences.logprobs"});
  sequence.logprobs = 20;
  sequence.scored = {2, 3, 4};  // three prompt tokens for two rows
  expect_corrupt([&] { decode_target_step(encode(message)); },
                 {"TargetStep", "sequences.scored", "3 prompt tokens"});
  sequence.scored = {2, 3};
  EXPECT_NO_THROW(decode_target_step(encode(message)));
  sequence.verify = true;  // a block of two drafts needs three rows
  sequence.gamma = 2;
  expect_corrupt([&] { decode_target_step(encode(message)); },
                 {"TargetStep", "sequences.logit_count", "2 drafts"});

  TargetResult result;
  result.outcomes.emplace_back();
  result.outcomes[0].accepted = 1;
  result.outcomes[0].logprobs.resize(3);  // a block emitting two tokens
  expect_corrupt([&] { decode_target_result(encode(result)); },
                 {"TargetResult", "outcomes.logprobs", "emits 2"});
  result.outcomes[0].logprobs.resize(2);
  EXPECT_NO_THROW(decode_target_result(encode(result)));
}

TEST(MessagesCorrupt, LocalQRowsAreNeverEncoded) {
  // Rows in one process's memory mean nothing to another: encoding them
  // is a bug in the sender, said as such.
  TargetStep message;
  message.sequences.emplace_back();
  message.sequences[0].session = 12;
  message.sequences[0].q_source = QSource::local;
  EXPECT_THAT([&] { (void)encode(message); },
              ThrowsMessage<Error>(AllOf(HasSubstr("session 12"), HasSubstr("q_source local"))));
}

TEST(MessagesCorrupt, QRowsCountsMustNotBeNegative) {
  QRows message = test_support::sample_q_rows();
  message.entries[0].rows = -1;
  expect_corrupt([&] { decode_q_rows(encode(message)); }, {"QRows", "entries.rows"});
  message = test_support::sample_q_rows();
  message.runs = {1};  // covers one of two entries
  expect_corrupt([&] { decode_q_rows(encode(message)); }, {"QRows", "runs", "cover 1 entries of 2"});
  message.runs = {2, 0};
  expect_corrupt([&] { decode_q_rows(encode(message)); }, {"QRows", "runs", "a run of 0"});
  message = test_support::sample_q_rows();
  message.vocab = -1;
  expect_corrupt([&] { decode_q_rows(encode(message)); }, {"QRows", "vocab"});
}

TEST(MessagesCorrupt, DraftStepNegativeGamma) {
  DraftStep message = test_support::sample_draft_step();
  message.entries[0].gamma = -2;
  expect_corrupt([&] { decode_draft_step(encode(message)); }, {"DraftStep", "entries.gamma"});
}

// ---- random corruption ------------------------------------------------------------

TEST(MessagesCorrupt, RandomCorruptionNeverCrashes) {
  // Flipped bytes may still decode (a changed token id is well-formed); what
  // must never happen is anything but a clean decode or a tandem::Error.
  std::mt19937 random(20240611);
  int rejected = 0;
  int trials = 0;
  for (const auto& sample : encoded_samples()) {
    for (int trial = 0; trial < 3000; ++trial, ++trials) {
      Bytes bytes = sample.bytes;
      const int flips = 1 + static_cast<int>(random() % 4);
      for (int f = 0; f < flips; ++f) {
        bytes[random() % bytes.size()] = static_cast<std::byte>(random() & 0xFF);
      }
      if (random() % 4 == 0) bytes.resize(random() % bytes.size());
      try {
        sample.decode(bytes);
      } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::corrupt_data) << e.what();
        ++rejected;
      }
    }
  }
  EXPECT_GT(rejected, trials / 4);  // most corruptions are caught
}

}  // namespace
}  // namespace tandem::wire
