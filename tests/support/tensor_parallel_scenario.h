// Tensor-parallel test scenarios shared by the in-process tests (ranks as
// threads, tests/workers/tensor_parallel_test.cpp) and the MPI ones (ranks
// as processes, tests/workers/mpi/): what one rank does, whatever carries
// its collectives.
//
// Logit tolerance used by both: for every logits row,
// max |tp - unsplit| / max |unsplit| < 1e-4 (the all-reduces add partial
// sums in another order than one GEMM, so equality is not expected).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <vector>

#include "kernels/backend.h"
#include "tests/support/small_model.h"
#include "tests/support/tiny_models.h"
#include "transport/communicator.h"
#include "workers/kv_cache.h"
#include "workers/llama_model.h"
#include "workers/llama_weights.h"
#include "workers/plain_decoder.h"
#include "workers/tensor_parallel.h"
#include "workers/token_sampler.h"

namespace tandem::test_support {

using WeightFactory = std::function<LlamaWeights(const TensorShard&, Backend&)>;

inline TensorShard shard_of(Communicator& comm) {
  return {comm.rank(), comm.size(), comm.size() > 1 ? &comm : nullptr};
}

inline WeightFactory dummy(const ModelConfig& config, uint64_t seed) {
  return [config, seed](const TensorShard& shard, Backend& backend) {
    return make_dummy_weights(config, seed, backend, shard);
  };
}

inline WeightFactory tiny_target(const ModelConfig& config) {
  return [config](const TensorShard& shard, Backend& backend) {
    return load_llama_weights(kTinyTarget, config, backend, shard);
  };
}

// A small dummy shape with H query heads over K KV heads, MLP width I and
// vocabulary V (the split kinds: K >= tp, K < tp, V not dividing tp).
inline ModelConfig heads(int H, int K, int I, int V) {
  ModelConfig c = small_llama(64, 2, V, 64);
  c.num_heads = H;
  c.num_kv_heads = K;
  c.head_dim = 8;
  c.intermediate_size = I;
  return c;
}

// Qwen3's attention on the same shape: per-head q/k norms, and head_dim 32
// so that q_dim (H * 32) is not the hidden size 64.
inline ModelConfig qwen3_heads(int H, int K, int I, int V) {
  ModelConfig c = heads(H, K, I, V);
  c.architecture = "Qwen3ForCausalLM";
  c.head_dim = 32;
  c.qk_norm = true;
  return c;
}

// Dummy weights whose q_norm and k_norm are not all ones (dummy norms are),
// so that a shard applying another head's or another layer's weights, or
// none, would show. Every shard gets the same (D) values: the norms are
// replicated.
inline WeightFactory dummy_with_qk_norms(const ModelConfig& config, uint64_t seed) {
  return [config, seed](const TensorShard& shard, Backend& backend) {
    LlamaWeights w = make_dummy_weights(config, seed, backend, shard);
    const size_t D = static_cast<size_t>(config.head_dim);
    std::vector<float> q(D), k(D);
    for (size_t l = 0; l < w.layers.size(); ++l) {
      for (size_t i = 0; i < D; ++i) {
        q[i] = 0.25f + 0.125f * static_cast<float>((i * 7 + l * 3) % 13);
        k[i] = 2.0f - 0.125f * static_cast<float>((i * 5 + l) % 11);
      }
      backend.upload(q, w.layers[l].q_norm.data());
      backend.upload(k, w.layers[l].k_norm.data());
    }
    return w;
  };
}

// One model + cache of a shard (the unsplit one by default).
struct Rank {
  std::unique_ptr<Backend> backend = make_cpu_backend();
  std::unique_ptr<PagedKvCache> cache;
  std::unique_ptr<LlamaModel> model;
  Rank(const ModelConfig& config, const WeightFactory& make_weights, const TensorShard& shard) {
    cache = std::make_unique<PagedKvCache>(config, 64, 4, *backend, shard);
    model = std::make_unique<LlamaModel>(config, make_weights(shard, *backend), *backend, shard);
  }
};

// A scenario of ragged steps: a prefill, single-token decodes, then mixed
// batches of decodes, verification blocks and a new prefill. Returns each
// step's logits (empty on ranks other than TP rank 0).
inline std::vector<std::vector<float>> run_scenario(Rank& rank) {
  PagedKvCache& cache = *rank.cache;
  const int V = rank.model->config().vocab_size;
  auto tokens = [&](int count, int salt) {
    std::vector<int32_t> t;
    for (int i = 0; i < count; ++i) t.push_back((salt * 37 + i * 101 + 5) % V);
    return t;
  };
  struct Part {
    int seq_index;
    int count;
    int logit_count;
  };
  const std::vector<std::vector<Part>> schedule = {
      {{0, 7, 7}},
      {{0, 1, 1}},
      {{0, 1, 1}},
      {{0, 1, 1}},
      {{0, 1, 1}, {1, 5, 2}, {2, 3, 3}},
      {{2, 4, 1}, {0, 2, 2}, {1, 1, 1}},
  };
  std::vector<SequenceId> seqs;
  for (int i = 0; i < 3; ++i) seqs.push_back(cache.create_sequence());
  std::vector<std::vector<float>> out;
  int salt = 0;
  for (const auto& parts : schedule) {
    std::vector<std::vector<int32_t>> held;
    std::vector<SequenceStep> steps;
    for (const Part& p : parts) held.push_back(tokens(p.count, ++salt));
    for (size_t i = 0; i < parts.size(); ++i) {
      const SequenceId seq = seqs[static_cast<size_t>(parts[i].seq_index)];
      EXPECT_TRUE(cache.reserve(seq, cache.length(seq) + parts[i].count));
      steps.push_back({seq, held[i], parts[i].logit_count});
    }
    const float* logits = rank.model->forward(steps, cache);
    const int R = rank.model->logit_rows();
    if (rank.model->shard().rank == 0) {
      out.emplace_back(logits, logits + static_cast<size_t>(R) * V);
    } else {
      EXPECT_EQ(logits, nullptr) << "only TP rank 0 gets logits";
      out.emplace_back();
    }
  }
  return out;
}

// max |a - b| / max |b| over one row.
inline double row_error(const float* a, const float* b, int V) {
  double diff = 0, scale = 0;
  for (int i = 0; i < V; ++i) {
    diff = std::max(diff, static_cast<double>(std::abs(a[i] - b[i])));
    scale = std::max(scale, static_cast<double>(std::abs(b[i])));
  }
  return diff / scale;
}

// Worst row_error of `got` against `expected`, scenario step by step.
inline double worst_row_error(const std::vector<std::vector<float>>& got,
                              const std::vector<std::vector<float>>& expected, int V) {
  EXPECT_EQ(got.size(), expected.size());
  double worst = 0;
  for (size_t s = 0; s < std::min(got.size(), expected.size()); ++s) {
    EXPECT_EQ(got[s].size(), expected[s].size()) << "step " << s;
    const size_t rows = std::min(got[s].size(), expected[s].size()) / static_cast<size_t>(V);
    for (size_t r = 0; r < rows; ++r)
      worst = std::max(worst, row_error(got[s].data() + r * V, expected[s].data() + r * V, V));
  }
  return worst;
}

// One rank's part in decoding n tokens after prompt in lockstep: every rank
// runs the same steps; TP rank 0 picks each token (TokenSampler, as plain
// decoding does) and broadcasts it. Returns the tokens (on every rank).
inline std::vector<int32_t> decode_in_lockstep(Communicator& comm, const ModelConfig& config,
                                               const WeightFactory& make_weights,
                                               const std::vector<int32_t>& prompt,
                                               const SamplingParams& params, int n) {
  Rank rank(config, make_weights, shard_of(comm));
  TokenSampler sampler(*rank.backend, config.vocab_size);
  const SequenceId seq = rank.cache->create_sequence();
  if (!rank.cache->reserve(seq, static_cast<int>(prompt.size()) + n)) {
    ADD_FAILURE() << "the test cache cannot hold " << prompt.size() + n << " tokens";
    return {};
  }
  std::vector<int32_t> out;
  SequenceStep step{seq, prompt, 1};
  int32_t token = 0;
  for (int i = 0; i < n; ++i) {
    const float* logits = rank.model->forward(std::span(&step, 1), *rank.cache);
    Bytes bytes(sizeof token);
    if (comm.rank() == 0) {
      const int64_t position = static_cast<int64_t>(prompt.size()) + i;
      token = sampler.pick(logits, params, position);
      std::memcpy(bytes.data(), &token, sizeof token);
    }
    comm.broadcast(bytes, 0);
    std::memcpy(&token, bytes.data(), sizeof token);
    out.push_back(token);
    step.tokens = std::span(&token, 1);
  }
  return out;
}

// The unsplit model's plain decoding of the same request: the reference.
inline std::vector<int32_t> decode_unsplit(const ModelConfig& config,
                                           const WeightFactory& make_weights,
                                           const std::vector<int32_t>& prompt,
                                           const SamplingParams& params, int n) {
  Rank rank(config, make_weights, TensorShard{});
  DecodeRequest request{prompt, n, params, {}};
  std::vector<int32_t> out;
  decode_plain(*rank.model, *rank.cache, request, [&](int32_t t) {
    out.push_back(t);
    return true;
  });
  return out;
}

// Greedy, and seeded sampling with temperature 0.8 and top-p 0.95.
inline std::vector<SamplingParams> greedy_and_sampled(uint64_t seed) {
  SamplingParams greedy;
  greedy.temperature = 0;
  SamplingParams sampled;
  sampled.temperature = 0.8f;
  sampled.top_p = 0.95f;
  sampled.seed = seed;
  return {greedy, sampled};
}

}  // namespace tandem::test_support
