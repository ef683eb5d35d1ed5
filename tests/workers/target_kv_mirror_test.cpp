// A tensor-parallel rank's cache as a driven mirror (TargetKv::stamp puts
// the coordinator's block numbers in each TargetStep; a mirrored
// TargetStepRunner adopts them). With prefix caching on the coordinator's
// cache, a sequence starts on cached blocks the rank never saw it hold, a
// truncation into a shared block stops at that block's start, and the
// blocks are reused by others: the rank must read and write exactly the
// blocks the coordinator chose. The same script runs on the tiny target
// twice: the coordinator's accounting-only cache driving a mirror, and one
// in-process cache with prefix caching on (the engine's own path, the
// contract's); every score must be bit for bit the same.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "tests/support/tiny_models.h"
#include "workers/kv_cache.h"
#include "workers/llama_model.h"
#include "workers/llama_weights.h"
#include "workers/speculation/target_kv.h"
#include "workers/speculation/target_step_runner.h"

namespace tandem {
namespace {

using test_support::kTinyPair;
using test_support::kTinyTarget;
using test_support::kTinyBlockSize;

namespace fs = std::filesystem;
constexpr int kBlocks = 32;

using Tokens = std::vector<int32_t>;

class TargetKvMirror : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs::exists(kTinyTarget / "model.safetensors"))
        << "models/tiny is missing: run tools/train/reproduce.sh or restore it from git";
    target = std::make_unique<LlamaModel>(
        config, load_llama_weights(kTinyTarget, config, *backend), *backend);
    std::ifstream file(kTinyPair / "eval_reference.json");
    windows = nlohmann::json::parse(file).at("windows").get<std::vector<Tokens>>();
    ASSERT_GE(windows.size(), 3u);
  }

  // One target pass feeding `tokens` from the sequence's cached length on,
  // every fed position's row scoring the next token: the scores.
  std::vector<TokenLogprob> feed(TargetKv& kv, TargetExecutor& runner, SequenceId seq,
                                 const Tokens& tokens) {
    PagedKvCache& cache = kv.cache();
    const int start = cache.length(seq);
    EXPECT_TRUE(cache.reserve(seq, static_cast<int>(tokens.size())));
    TargetStep step;
    TargetStep::Sequence s;
    s.seq = seq;
    s.start = start;
    s.tokens.assign(tokens.begin() + start, tokens.end());
    s.logit_count = static_cast<int32_t>(s.tokens.size());
    s.logprobs = 0;
    s.scored.assign(tokens.begin() + start + 1, tokens.end());
    step.sequences.push_back(s);
    kv.stamp(step);
    TargetResult result;
    runner.run(step, result);
    cache.set_length(seq, static_cast<int>(tokens.size()));
    cache.publish(seq, tokens, 0);
    return result.prompt_logprobs.at(0);
  }

  // The script: a prompt, another one, a chat turn on the first, a second
  // sequence on its prefix truncated into a shared block and fed
  // differently, then the turn goes on. All scores, in order.
  std::vector<std::vector<TokenLogprob>> script(PagedKvCache& cache, TargetExecutor& runner,
                                                int& attached) {
    TargetKv kv(cache);
    std::vector<std::vector<TokenLogprob>> scores;
    const Tokens first(windows[0].begin(), windows[0].begin() + 48);  // three full blocks
    Tokens turn = first;
    turn.insert(turn.end(), windows[1].begin(), windows[1].begin() + 13);
    Tokens other(windows[2].begin(), windows[2].begin() + 20);

    const SequenceId a = cache.create_sequence();
    scores.push_back(feed(kv, runner, a, first));
    kv.release(a);  // its blocks stay cached
    const SequenceId c = cache.create_sequence();
    scores.push_back(feed(kv, runner, c, other));

    const SequenceId b = cache.create_sequence();
    attached = cache.attach_prefix(b, turn, 0, static_cast<int>(turn.size()) - 1);
    scores.push_back(feed(kv, runner, b, turn));

    // d shares b's first three blocks, then is cut inside the third (which
    // b holds too): it lets that block go whole and writes its own.
    const SequenceId d = cache.create_sequence();
    cache.attach_prefix(d, turn, 0, static_cast<int>(turn.size()) - 1);
    Tokens diverged(turn.begin(), turn.begin() + 40);
    diverged.insert(diverged.end(), windows[2].begin() + 20, windows[2].begin() + 30);
    kv.truncate(d, 40);
    EXPECT_EQ(cache.length(d), 32) << "a shared block is kept whole or not at all";
    scores.push_back(feed(kv, runner, d, diverged));

    // b, cut inside its own last block (not shared), goes on: it reads the
    // third block, which d must not have written.
    kv.truncate(b, 50);
    turn.resize(50);
    turn.insert(turn.end(), windows[1].begin() + 13, windows[1].begin() + 20);
    scores.push_back(feed(kv, runner, b, turn));
    kv.release(b);
    kv.release(c);
    kv.release(d);
    TargetStep last;  // the releases reach the executor with the next pass
    kv.stamp(last);
    TargetResult result;
    runner.run(last, result);
    EXPECT_EQ(cache.used_blocks(), 0);
    return scores;
  }

  std::unique_ptr<Backend> backend = make_cpu_backend();
  const ModelConfig config = load_model_config(kTinyTarget);
  std::unique_ptr<LlamaModel> target;
  std::vector<Tokens> windows;
};

TargetStep::Sequence fed(SequenceId seq, int start, int tokens) {
  TargetStep::Sequence s;
  s.seq = seq;
  s.start = start;
  s.tokens.assign(static_cast<size_t>(tokens), 1);
  return s;
}

void expect_bitwise_equal(const std::vector<std::vector<TokenLogprob>>& a,
                          const std::vector<std::vector<TokenLogprob>>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t pass = 0; pass < a.size(); ++pass) {
    ASSERT_EQ(a[pass].size(), b[pass].size()) << "pass " << pass;
    ASSERT_FALSE(a[pass].empty());
    for (size_t i = 0; i < a[pass].size(); ++i) {
      EXPECT_EQ(a[pass][i].token, b[pass][i].token);
      EXPECT_EQ(std::memcmp(&a[pass][i].logprob, &b[pass][i].logprob, sizeof(float)), 0)
          << "pass " << pass << ", token " << i << ": " << a[pass][i].logprob << " vs "
          << b[pass][i].logprob;
    }
  }
}

TEST_F(TargetKvMirror, DrivenMirrorReadsAndWritesTheCoordinatorsBlocks) {
  PagedKvCache in_process(config, kBlocks, kTinyBlockSize, *backend);
  in_process.enable_prefix_caching(kBlocks);
  TargetStepRunner shared(*target, in_process, TargetStepRunner::CacheMode::shared);
  int attached_in_process = 0;
  const auto expected = script(in_process, shared, attached_in_process);
  EXPECT_EQ(attached_in_process, 48);

  // The coordinator: accounting only, prefix caching on. The rank: a cache
  // of the same size that never allocates (adopt_blocks).
  PagedKvCache accounting(config, kBlocks, kTinyBlockSize, *backend, {}, PagedKvCache::Storage::none);
  accounting.enable_prefix_caching(kBlocks);
  PagedKvCache rank(config, kBlocks, kTinyBlockSize, *backend);
  TargetStepRunner mirrored(*target, rank, TargetStepRunner::CacheMode::mirrored);
  int attached = 0;
  const auto got = script(accounting, mirrored, attached);
  EXPECT_EQ(attached, 48);
  expect_bitwise_equal(got, expected);
  EXPECT_EQ(accounting.prefix_counters().hits, in_process.prefix_counters().hits);
}

TEST_F(TargetKvMirror, TablesStartAtBlockZeroOnlyForANewSequence) {
  PagedKvCache accounting(config, kBlocks, kTinyBlockSize, *backend, {}, PagedKvCache::Storage::none);
  TargetKv kv(accounting);
  const SequenceId seq = accounting.create_sequence();
  ASSERT_TRUE(accounting.reserve(seq, 40));
  TargetStep step;
  step.sequences.push_back(fed(seq, 0, 40));
  kv.stamp(step);
  EXPECT_EQ(step.sequences[0].table_from, 0);
  const std::span<const int32_t> blocks = accounting.block_table(seq);
  EXPECT_EQ(step.sequences[0].table, Tokens(blocks.begin(), blocks.end()));

  accounting.set_length(seq, 40);
  ASSERT_TRUE(accounting.reserve(seq, 50));
  TargetStep next;
  next.sequences.push_back(fed(seq, 40, 10));
  kv.stamp(next);
  EXPECT_EQ(next.sequences[0].table_from, 2);  // the block of position 40 on
  EXPECT_EQ(next.sequences[0].table, (Tokens{accounting.block_table(seq)[2],
                                             accounting.block_table(seq)[3]}));

  // Released, then a new sequence that happens to reuse nothing: from 0 again.
  kv.release(seq);
  const SequenceId again = accounting.create_sequence();
  ASSERT_TRUE(accounting.reserve(again, 5));
  TargetStep after;
  after.sequences.push_back(fed(again, 0, 5));
  kv.stamp(after);
  EXPECT_EQ(after.released, (std::vector<int64_t>{seq}));
  EXPECT_EQ(after.sequences[0].table_from, 0);
  EXPECT_EQ(after.sequences[0].table.size(), 1u);
}

TEST_F(TargetKvMirror, ANewSequenceWhoseTableSkipsBlocksIsRefused) {
  PagedKvCache rank(config, kBlocks, kTinyBlockSize, *backend);
  TargetStepRunner mirrored(*target, rank, TargetStepRunner::CacheMode::mirrored);
  TargetStep step;
  step.step = 3;
  step.sequences.push_back(fed(9, 16, 4));
  step.sequences[0].table_from = 1;
  step.sequences[0].table = {5};
  TargetResult result;
  try {
    mirrored.run(step, result);
    ADD_FAILURE() << "ran a sequence whose first blocks this rank never saw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("new to this rank"), std::string::npos) << e.what();
  }
  step.sequences[0].table_from = 0;
  step.sequences[0].table = {5};  // covers 16 positions of the 20 fed
  EXPECT_THROW(mirrored.run(step, result), Error);
}

}  // namespace
}  // namespace tandem
