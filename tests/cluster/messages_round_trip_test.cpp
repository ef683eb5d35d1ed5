// Every message type survives encode → decode with every field intact,
// peek_type reads the type from the header, and the wire fuzzer's seeds are
// this format's samples.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "tests/cluster/sample_messages.h"
#include "cluster/wire/messages.h"

namespace tandem::wire {
namespace {

using test_support::sample_draft_reply;
using test_support::sample_draft_step;
using test_support::sample_q_rows;
using test_support::sample_shutdown;
using test_support::sample_target_result;
using test_support::sample_target_step;

void expect_same(const SamplingParams& a, const SamplingParams& b) {
  EXPECT_EQ(a.temperature, b.temperature);
  EXPECT_EQ(a.top_k, b.top_k);
  EXPECT_EQ(a.top_p, b.top_p);
  EXPECT_EQ(a.seed, b.seed);
  EXPECT_EQ(a.min_p, b.min_p);
  EXPECT_EQ(a.coupling, b.coupling);
}

void expect_same(const std::vector<LogitProcessing>& a, const std::vector<LogitProcessing>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].presence_penalty, b[i].presence_penalty);
    EXPECT_EQ(a[i].frequency_penalty, b[i].frequency_penalty);
    EXPECT_EQ(a[i].repetition_penalty, b[i].repetition_penalty);
    EXPECT_EQ(a[i].bias_tokens, b[i].bias_tokens);
    EXPECT_EQ(a[i].bias_values, b[i].bias_values);
    EXPECT_EQ(a[i].min_tokens, b[i].min_tokens);
    EXPECT_EQ(a[i].masked_stop_ids, b[i].masked_stop_ids);
    EXPECT_EQ(a[i].prompt_length, b[i].prompt_length);
  }
}

// Bit for bit: scores travel as the floats they are.
void expect_same(const std::vector<TokenLogprob>& a, const std::vector<TokenLogprob>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t j = 0; j < a.size(); ++j) {
    EXPECT_EQ(a[j].token, b[j].token);
    EXPECT_EQ(a[j].logprob, b[j].logprob);
    EXPECT_EQ(a[j].top, b[j].top);
  }
}

TEST(MessagesRoundTrip, DraftStep) {
  const DraftStep sent = sample_draft_step();
  const DraftStep got = decode_draft_step(encode(sent));
  EXPECT_EQ(got.step, sent.step);
  ASSERT_EQ(got.entries.size(), sent.entries.size());
  for (size_t i = 0; i < sent.entries.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(got.entries[i].session, sent.entries[i].session);
    EXPECT_EQ(got.entries[i].known, sent.entries[i].known);
    EXPECT_EQ(got.entries[i].new_tokens, sent.entries[i].new_tokens);
    EXPECT_EQ(got.entries[i].gamma, sent.entries[i].gamma);
    expect_same(got.entries[i].sampling, sent.entries[i].sampling);
    expect_same(got.entries[i].processing, sent.entries[i].processing);
    EXPECT_EQ(got.entries[i].cache_salt, sent.entries[i].cache_salt);
  }
  EXPECT_EQ(got.released, sent.released);
}

TEST(MessagesRoundTrip, DraftReply) {
  const DraftReply sent = sample_draft_reply();
  const DraftReply got = decode_draft_reply(encode(sent));
  EXPECT_EQ(got.step, sent.step);
  EXPECT_EQ(got.tokens, sent.tokens);
  EXPECT_EQ(got.seconds, sent.seconds);
  EXPECT_EQ(got.faults, sent.faults);
  EXPECT_EQ(got.prefix_queries, sent.prefix_queries);
  EXPECT_EQ(got.prefix_hits, sent.prefix_hits);
}

TEST(MessagesRoundTrip, QRows) {
  const QRows sent = sample_q_rows();
  const QRows got = decode_q_rows(encode(sent));
  EXPECT_EQ(got.step, sent.step);
  EXPECT_EQ(got.vocab, sent.vocab);
  ASSERT_EQ(got.entries.size(), sent.entries.size());
  for (size_t i = 0; i < sent.entries.size(); ++i) {
    EXPECT_EQ(got.entries[i].session, sent.entries[i].session);
    EXPECT_EQ(got.entries[i].rows, sent.entries[i].rows);
  }
  EXPECT_EQ(got.runs, sent.runs);
}

TEST(MessagesRoundTrip, TargetStep) {
  const TargetStep sent = sample_target_step();
  const TargetStep got = decode_target_step(encode(sent));
  EXPECT_EQ(got.step, sent.step);
  ASSERT_EQ(got.sequences.size(), sent.sequences.size());
  for (size_t i = 0; i < sent.sequences.size(); ++i) {
    SCOPED_TRACE(i);
    const TargetStep::Sequence& a = got.sequences[i];
    const TargetStep::Sequence& b = sent.sequences[i];
    EXPECT_EQ(a.seq, b.seq);
    EXPECT_EQ(a.start, b.start);
    EXPECT_EQ(a.tokens, b.tokens);
    EXPECT_EQ(a.logit_count, b.logit_count);
    EXPECT_EQ(a.verify, b.verify);
    EXPECT_EQ(a.gamma, b.gamma);
    expect_same(a.sampling, b.sampling);
    EXPECT_EQ(a.first_position, b.first_position);
    EXPECT_EQ(a.lenience, b.lenience);
    EXPECT_EQ(a.session, b.session);
    EXPECT_EQ(a.q_source, b.q_source);
    EXPECT_EQ(a.q_step, b.q_step);
    EXPECT_EQ(a.q_first_row, b.q_first_row);
    expect_same(a.processing, b.processing);
    EXPECT_EQ(a.history, b.history);
    EXPECT_EQ(a.logprobs, b.logprobs);
    EXPECT_EQ(a.scored, b.scored);
    EXPECT_EQ(a.table_from, b.table_from);
    EXPECT_EQ(a.table, b.table);
  }
  EXPECT_EQ(got.released, sent.released);
  EXPECT_EQ(got.truncated, sent.truncated);
  EXPECT_EQ(got.truncated_lengths, sent.truncated_lengths);
}

TEST(MessagesRoundTrip, TargetResult) {
  const TargetResult sent = sample_target_result();
  const TargetResult got = decode_target_result(encode(sent));
  EXPECT_EQ(got.step, sent.step);
  ASSERT_EQ(got.outcomes.size(), sent.outcomes.size());
  for (size_t i = 0; i < sent.outcomes.size(); ++i) {
    EXPECT_EQ(got.outcomes[i].accepted, sent.outcomes[i].accepted);
    EXPECT_EQ(got.outcomes[i].token, sent.outcomes[i].token);
    EXPECT_EQ(got.outcomes[i].beta_sum, sent.outcomes[i].beta_sum);
    EXPECT_EQ(got.outcomes[i].beta_count, sent.outcomes[i].beta_count);
    EXPECT_EQ(got.outcomes[i].fault, sent.outcomes[i].fault);
    expect_same(got.outcomes[i].logprobs, sent.outcomes[i].logprobs);
  }
  ASSERT_EQ(got.prompt_logprobs.size(), sent.prompt_logprobs.size());
  for (size_t i = 0; i < sent.prompt_logprobs.size(); ++i)
    expect_same(got.prompt_logprobs[i], sent.prompt_logprobs[i]);
  EXPECT_EQ(got.forward_seconds, sent.forward_seconds);
  EXPECT_EQ(got.communication_seconds, sent.communication_seconds);
  EXPECT_EQ(got.verify_seconds, sent.verify_seconds);
}

TEST(MessagesRoundTrip, Shutdown) {
  const Shutdown sent = sample_shutdown();
  const Shutdown got = decode_shutdown(encode(sent));
  EXPECT_EQ(got.exit_code, sent.exit_code);
  EXPECT_EQ(got.reason, sent.reason);
}

TEST(MessagesRoundTrip, WorkerReady) {
  const WorkerReady sent = test_support::sample_worker_ready();
  const WorkerReady got = decode_worker_ready(encode(sent));
  EXPECT_EQ(got.rank, sent.rank);
  EXPECT_EQ(got.bytes_read, sent.bytes_read);
  EXPECT_EQ(got.resident_bytes, sent.resident_bytes);
  EXPECT_EQ(got.load_seconds, sent.load_seconds);
}

TEST(MessagesRoundTrip, EmptyMessagesOfEveryType) {
  EXPECT_TRUE(decode_draft_step(encode(DraftStep{})).entries.empty());
  EXPECT_TRUE(decode_draft_reply(encode(DraftReply{})).tokens.empty());
  EXPECT_TRUE(decode_q_rows(encode(QRows{})).entries.empty());
  EXPECT_TRUE(decode_target_step(encode(TargetStep{})).sequences.empty());
  EXPECT_TRUE(decode_target_result(encode(TargetResult{})).outcomes.empty());
  EXPECT_TRUE(decode_shutdown(encode(Shutdown{})).reason.empty());
}

TEST(MessagesRoundTrip, PeekTypeAndNames) {
  for (const auto& sample : test_support::encoded_samples()) {
    EXPECT_EQ(peek_type(sample.bytes), sample.type) << sample.name;
    EXPECT_EQ(message_name(sample.type), sample.name);
  }
}

TEST(MessagesRoundTrip, TagsAreDistinctPerType) {
  EXPECT_NE(tag_of(MessageType::draft_step), tag_of(MessageType::draft_reply));
  EXPECT_EQ(tag_of(MessageType::shutdown), 6);
}

TEST(MessagesRoundTrip, HeaderLayout) {
  // "TNDM", version 1, type, payload length: the layout messages.h promises.
  const Bytes bytes = encode(sample_shutdown());
  ASSERT_GE(bytes.size(), 12u);
  EXPECT_EQ(static_cast<char>(bytes[0]), 'T');
  EXPECT_EQ(static_cast<char>(bytes[3]), 'M');
  EXPECT_EQ(static_cast<uint8_t>(bytes[4]), kFormatVersion);
  EXPECT_EQ(static_cast<uint8_t>(bytes[5]), 0);
  EXPECT_EQ(static_cast<uint8_t>(bytes[6]), static_cast<uint8_t>(MessageType::shutdown));
  EXPECT_EQ(static_cast<uint8_t>(bytes[8]), bytes.size() - 12);
}

TEST(MessagesRoundTrip, TheFuzzersSeedsAreTheSamplesInThisFormat) {
  // tests/fuzz/corpus/wire_messages/<name>.bin is encode() of each sample:
  // seeds of an older format version would stop at the header check.
  // TANDEM_WRITE_WIRE_SEEDS=1 writes them afresh after a format change.
  const std::filesystem::path dir =
      std::filesystem::path(TANDEM_SOURCE_DIR) / "tests/fuzz/corpus/wire_messages";
  const bool write = std::getenv("TANDEM_WRITE_WIRE_SEEDS") != nullptr;
  for (const auto& sample : test_support::encoded_samples()) {
    const std::filesystem::path path = dir / (sample.name + ".bin");
    if (write) {
      std::ofstream(path, std::ios::binary)
          .write(reinterpret_cast<const char*>(sample.bytes.data()),
                 static_cast<std::streamsize>(sample.bytes.size()));
    }
    std::ifstream in(path, std::ios::binary);
    ASSERT_TRUE(in) << path;
    const std::vector<char> seed{std::istreambuf_iterator<char>(in), {}};
    const std::vector<char> expected(reinterpret_cast<const char*>(sample.bytes.data()),
                                     reinterpret_cast<const char*>(sample.bytes.data()) +
                                         sample.bytes.size());
    EXPECT_EQ(seed, expected) << path
                              << " is not this format's sample: rerun this test with "
                                 "TANDEM_WRITE_WIRE_SEEDS=1";
  }
}

}  // namespace
}  // namespace tandem::wire
