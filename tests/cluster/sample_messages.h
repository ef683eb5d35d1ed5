// One message of each type with every field set to a distinct, non-default
// value, for the round-trip and corruption tests of cluster/wire/messages.
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "cluster/wire/messages.h"

namespace tandem::test_support {

// Every field of a logit processing set (only sessions that ask carry one).
inline LogitProcessing sample_processing() {
  LogitProcessing p;
  p.presence_penalty = -0.5f;
  p.frequency_penalty = 1.25f;
  p.repetition_penalty = 1.5f;
  p.bias_tokens = {3, 4095};
  p.bias_values = {-100.0f, 7.5f};
  p.min_tokens = 9;
  p.masked_stop_ids = {2, 4095};
  p.prompt_length = 6;
  return p;
}

inline wire::DraftStep sample_draft_step() {
  wire::DraftStep message;
  message.step = 0x0102030405060708ULL;
  message.entries.push_back({7, 12, {1, 2, 3}, 4, {0.7f, 40, 0.9f, 99, 0.05f, Coupling::gumbel}, {sample_processing()},
                             0xfedcba9876543210ULL});  // a cache_salt past 63 bits
  message.entries.push_back({1ULL << 40, 0, {}, 0, {0.0f, 0, 1.0f, 0}});  // the smallest entry
  message.released = {3, 5, 1ULL << 63};
  return message;
}

inline wire::DraftReply sample_draft_reply() {
  wire::DraftReply message;
  message.step = 42;
  message.tokens = {{10, 11, 12, 13}, {}, {-5, 128000}, {}};  // ends on an empty row
  message.seconds = 0.0125;
  message.faults = {SessionFault::none, SessionFault::nonfinite_draft_logits, SessionFault::none,
                    SessionFault::bad_sampling};
  message.prefix_queries = (1ULL << 36) + 5;  // cumulative: past 32 bits
  message.prefix_hits = 1ULL << 35;
  return message;
}

inline wire::QRows sample_q_rows() {
  wire::QRows message;
  message.step = 9;
  message.vocab = 3;
  message.entries.push_back({77, 2});
  message.entries.push_back({78, 0});  // a session that drafted nothing
  message.runs = {1, 1};
  return message;
}

inline wire::TargetStep sample_target_step() {
  wire::TargetStep message;
  message.step = 1234567;
  wire::TargetStep::Sequence prefill;
  prefill.seq = -1;  // negative ids pass through untouched
  prefill.start = 0;
  prefill.tokens = {5, 6, 7, 8, 9};
  prefill.logit_count = 1;
  prefill.sampling = {0.0f, 0, 1.0f, 5};
  prefill.first_position = 1LL << 35;
  prefill.lenience = 0.5f;
  prefill.session = 11;
  prefill.logit_count = 4;  // its last four rows score the prompt's tokens 6..9
  prefill.logprobs = 20;
  prefill.scored = {6, 7, 8, 9};
  prefill.table = {40, 7};  // new to the ranks: its table from block 0
  message.sequences.push_back(prefill);

  wire::TargetStep::Sequence verify;
  verify.seq = 3;
  verify.start = 17;
  verify.tokens = {20, 21, 22};
  verify.logit_count = 3;
  verify.verify = true;
  verify.gamma = 2;
  verify.sampling = {0.8f, 50, 0.95f, 1ULL << 50, 0.0f, Coupling::gumbel};
  verify.first_position = 18;
  verify.lenience = 1.5f;
  verify.session = 12;
  verify.q_source = wire::QSource::one_hot;
  verify.processing = {sample_processing()};
  verify.history = {1, 2, 3, 4, 5, 6, 7};
  verify.logprobs = 0;
  verify.table_from = 1;  // start 17, block size 16: the block of position 17 on
  verify.table = {3, 95};
  message.sequences.push_back(verify);

  wire::TargetStep::Sequence from_draft_rank = verify;
  from_draft_rank.seq = 4;
  from_draft_rank.q_source = wire::QSource::draft_rank;
  from_draft_rank.q_step = (1ULL << 40) + 3;
  from_draft_rank.q_first_row = 1;
  message.sequences.push_back(from_draft_rank);

  message.released = {-7, 8};
  message.truncated = {5, 9};
  message.truncated_lengths = {0, 33};
  return message;
}

inline wire::TargetResult sample_target_result() {
  wire::TargetResult message;
  message.step = 77;
  // 1/3: not exact in a float
  message.outcomes = {{2, 1001, 1.0 / 3.0, 2, SessionFault::none, {}},
                      {0, 0, 0.0, 0, SessionFault::nonfinite_target_logits, {}}};
  message.outcomes[0].logprobs = {{17, -0.25f, {{17, -0.25f}, {3, -1.5f}}},
                                  {18, -1.0f / 3.0f, {}},
                                  {1001, -7.125f, {{2, -0.5f}}}};
  message.prompt_logprobs = {{}, {{6, -2.75f, {{4, -0.125f}}}}};
  message.forward_seconds = 0.031;
  message.communication_seconds = 0.004;
  message.verify_seconds = 0.002;
  return message;
}

inline wire::Shutdown sample_shutdown() {
  wire::Shutdown message;
  message.exit_code = 3;
  message.reason = "target rank 2 lost: heartbeat missed";
  return message;
}

inline wire::WorkerReady sample_worker_ready() {
  wire::WorkerReady message;
  message.rank = 3;
  message.bytes_read = (int64_t{1} << 33) + 12345;  // past 32 bits
  message.resident_bytes = 987654321;
  message.load_seconds = 1.0 / 3.0;
  return message;
}

// One sample of each type: its name, its encoding, and a decode that checks
// nothing but that the bytes parse (for the corruption tests).
struct EncodedSample {
  std::string name;
  wire::MessageType type;
  Bytes bytes;
  std::function<void(std::span<const std::byte>)> decode;
};

inline std::vector<EncodedSample> encoded_samples() {
  using namespace wire;
  return {
      {"DraftStep", MessageType::draft_step, encode(sample_draft_step()),
       [](std::span<const std::byte> b) { decode_draft_step(b); }},
      {"DraftReply", MessageType::draft_reply, encode(sample_draft_reply()),
       [](std::span<const std::byte> b) { decode_draft_reply(b); }},
      {"QRows", MessageType::q_rows, encode(sample_q_rows()),
       [](std::span<const std::byte> b) { decode_q_rows(b); }},
      {"TargetStep", MessageType::target_step, encode(sample_target_step()),
       [](std::span<const std::byte> b) { decode_target_step(b); }},
      {"TargetResult", MessageType::target_result, encode(sample_target_result()),
       [](std::span<const std::byte> b) { decode_target_result(b); }},
      {"Shutdown", MessageType::shutdown, encode(sample_shutdown()),
       [](std::span<const std::byte> b) { decode_shutdown(b); }},
      {"WorkerReady", MessageType::worker_ready, encode(sample_worker_ready()),
       [](std::span<const std::byte> b) { decode_worker_ready(b); }},
  };
}

}  // namespace tandem::test_support
