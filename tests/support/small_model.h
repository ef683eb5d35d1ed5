// small_llama: the shape of the random models tests build (4 query heads over
// 2 KV heads, so GQA is always exercised), in one place; small_qwen3 the same
// with Qwen3's attention; small_mixtral and small_qwen3_moe the same bodies
// with sparse MoE layers.
#pragma once

#include "kernels/backend.h"
#include "workers/kv_cache.h"
#include "workers/llama_model.h"
#include "workers/llama_weights.h"
#include "workers/model_config.h"

namespace tandem::test_support {

inline ModelConfig small_llama(int hidden, int layers, int vocab, int max_positions) {
  ModelConfig c;
  c.architecture = "LlamaForCausalLM";
  c.hidden_size = hidden;
  c.intermediate_size = hidden * 3 / 2;
  c.num_layers = layers;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = hidden / 4;
  c.vocab_size = vocab;
  c.max_position_embeddings = max_positions;
  return c;
}

// The same shape with Qwen3's attention: per-head q/k norms, and head_dim
// hidden / 2 given explicitly (q_dim = 2 * hidden, not the hidden size).
inline ModelConfig small_qwen3(int hidden, int layers, int vocab, int max_positions) {
  ModelConfig c = small_llama(hidden, layers, vocab, max_positions);
  c.architecture = "Qwen3ForCausalLM";
  c.head_dim = hidden / 2;
  c.qk_norm = true;
  return c;
}

// Mixtral's sparse layers on small_llama's attention: E experts of width
// hidden (divisible by TP 2 and 4 at the usual hidden sizes), top_k per
// token, always renormalised.
inline ModelConfig small_mixtral(int hidden, int layers, int vocab, int max_positions, int E = 8,
                                 int top_k = 2) {
  ModelConfig c = small_llama(hidden, layers, vocab, max_positions);
  c.architecture = "MixtralForCausalLM";
  c.intermediate_size = hidden;
  c.num_experts = E;
  c.moe_top_k = top_k;
  c.moe_norm_topk_prob = true;
  return c;
}

// Qwen3-MoE's on small_qwen3's attention: many narrow experts (width
// hidden / 2), top_k per token, renormalised when norm_topk_prob.
inline ModelConfig small_qwen3_moe(int hidden, int layers, int vocab, int max_positions,
                                   int E = 16, int top_k = 4, bool norm_topk_prob = true) {
  ModelConfig c = small_qwen3(hidden, layers, vocab, max_positions);
  c.architecture = "Qwen3MoeForCausalLM";
  c.intermediate_size = hidden / 2;
  c.num_experts = E;
  c.moe_top_k = top_k;
  c.moe_norm_topk_prob = norm_topk_prob;
  return c;
}

// A model of random (dummy) weights with its own paged KV cache: exactness,
// not realism, is what the tests that use it check.
struct RandomModel {
  RandomModel(Backend& backend, const ModelConfig& config, uint64_t seed, int blocks = 256,
              int block_size = 8)
      : cache(config, blocks, block_size, backend),
        model(config, make_dummy_weights(config, seed, backend), backend) {}
  PagedKvCache cache;
  LlamaModel model;
};

}  // namespace tandem::test_support
