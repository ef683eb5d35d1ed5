// Plain autoregressive decoding: greedy tokens are the argmax of a full
// recompute of the prefix (the KV cache changes nothing), seeded sampling
// replays exactly, and stop tokens end generation.
#include "workers/plain_decoder.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "common/error.h"
#include "tests/support/small_model.h"
#include "workers/llama_weights.h"

namespace tandem {
namespace {

ModelConfig small_config() { return test_support::small_llama(32, 2, 64, 128); }

struct Fixture {
  std::unique_ptr<Backend> backend = make_cpu_backend();
  ModelConfig config = small_config();
  LlamaModel model{config, make_dummy_weights(config, 3, *backend), *backend};
  PagedKvCache cache{config, 32, 8, *backend};

  std::vector<int32_t> run(const DecodeRequest& request) {
    std::vector<int32_t> out;
    decode_plain(model, cache, request, [&](int32_t t) {
      out.push_back(t);
      return true;
    });
    return out;
  }
};

TEST(PlainDecoder, GreedyEqualsArgmaxOfFullRecompute) {
  Fixture f;
  DecodeRequest request;
  request.prompt = {5, 9, 1, 33};
  request.max_new_tokens = 20;
  request.sampling.temperature = 0;
  const std::vector<int32_t> out = f.run(request);
  ASSERT_EQ(out.size(), 20u);
  EXPECT_EQ(f.cache.used_blocks(), 0) << "the sequence is released";

  std::vector<int32_t> prefix = request.prompt;
  for (int32_t token : out) {
    const SequenceId seq = f.cache.create_sequence();
    ASSERT_TRUE(f.cache.reserve(seq, static_cast<int>(prefix.size())));
    SequenceStep step{seq, prefix, 1};
    const float* logits = f.model.forward(std::span(&step, 1), f.cache);
    EXPECT_EQ(std::max_element(logits, logits + f.config.vocab_size) - logits, token);
    f.cache.release(seq);
    prefix.push_back(token);
  }
}

TEST(PlainDecoder, SeededSamplingReplaysAndSeedsDiffer) {
  Fixture f;
  DecodeRequest request;
  request.prompt = {1, 2, 3};
  request.max_new_tokens = 24;
  request.sampling.temperature = 1.0f;
  request.sampling.seed = 11;
  const auto first = f.run(request);
  EXPECT_EQ(f.run(request), first);
  request.sampling.seed = 12;
  EXPECT_NE(f.run(request), first);
}

TEST(PlainDecoder, StopTokenEndsGenerationAndIsEmitted) {
  Fixture f;
  DecodeRequest request;
  request.prompt = {4, 4, 4};
  request.max_new_tokens = 16;
  request.sampling.temperature = 0;
  const auto free_run = f.run(request);
  request.stop_ids = {free_run[3]};
  const auto stopped = f.run(request);
  const auto first_stop = std::find(free_run.begin(), free_run.end(), free_run[3]);
  EXPECT_EQ(stopped, std::vector<int32_t>(free_run.begin(), first_stop + 1));
}

TEST(PlainDecoder, RejectsRequestsPastTheContext) {
  Fixture f;
  DecodeRequest request;
  request.prompt = std::vector<int32_t>(100, 1);
  request.max_new_tokens = 29;  // 129 > 128 positions
  EXPECT_THROW(f.run(request), Error);
  request.prompt.clear();
  request.max_new_tokens = 1;
  EXPECT_THROW(f.run(request), Error);
  EXPECT_EQ(f.cache.used_blocks(), 0);
}

}  // namespace
}  // namespace tandem
