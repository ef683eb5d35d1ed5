// LlamaModel: the Llama forward pass over a ragged batch.
//
// One call runs every layer once for several sequences at once, each adding
// one or more tokens at its own positions and attending to its own paged KV
// cache: decode (1 token), verification (γ+1 tokens) and prefill (n tokens)
// are all the same call. Not thread-safe; one engine thread drives a model.
//
// Tensor parallel (workers/tensor_parallel.h): every rank of the TP group
// builds a LlamaModel over its shard of the weights and its shard of the KV
// cache, and calls forward() with the same steps in the same order. Local
// work uses the rank's heads, I/tp and vocabulary rows; the partial hidden
// states are all-reduced after the embedding, o_proj and down_proj, and the
// vocabulary slices of the logits are gathered on TP rank 0. A sparse MoE
// model (Mixtral, Qwen3-MoE) runs its routed experts in place of the dense
// MLP, each expert on its I/tp slice, with the same one all-reduce.
#pragma once

#include <functional>
#include <span>
#include <vector>

#include "kernels/backend.h"
#include "workers/kv_cache.h"
#include "workers/llama_weights.h"
#include "workers/model_config.h"
#include "workers/tensor_parallel.h"

namespace tandem {

// One sequence's part of a step: tokens appended at positions
// cache.length(seq) .. cache.length(seq) + tokens.size() - 1.
struct SequenceStep {
  SequenceId seq = 0;
  std::span<const int32_t> tokens;
  int logit_count = 1;  // logits for the last logit_count new tokens (γ+1 to verify)
};

class LlamaModel {
 public:
  // weights and the cache must belong to the same shard (checked).
  LlamaModel(ModelConfig config, LlamaWeights weights, Backend& backend,
             TensorShard shard = {});

  // Runs the step, appending each sequence's K/V to the cache (the caller has
  // reserved room; an unreserved position is an Error naming the sequence).
  // Returns logits (R, V) in backend memory, valid until the next call: rows
  // in step order, per step the rows of its last logit_count new tokens.
  // Split: the full logits on TP rank 0, nullptr on every other rank. Every
  // rank validates the step identically, so a bad step throws on all ranks
  // before any collective.
  const float* forward(std::span<const SequenceStep> steps, PagedKvCache& cache);
  // Rows the last forward returned (on every rank).
  int logit_rows() const { return logit_rows_; }
  // Seconds the last forward spent inside collectives (0 when unsplit).
  double communication_seconds() const { return communication_seconds_; }

  const ModelConfig& config() const { return config_; }
  const LlamaWeights& weights() const { return weights_; }
  const TensorShard& shard() const { return shard_; }
  const ShardLayout& shard_layout() const { return layout_; }
  Backend& backend() { return backend_; }

 private:
  void ensure_workspace(int T, int R);
  void moe_block(int layer, int T);
  void check_weight_shapes() const;
  // The TP collectives, timed into communication_seconds_.
  // Runs a collective of the TP group between two step graph segments,
  // counting its time as communication.
  void between_graph_segments(const std::function<void()>& collective);
  void all_reduce(float* data, size_t n);
  const float* gather_logits(int R);

  ModelConfig config_;
  LlamaWeights weights_;
  Backend& backend_;
  TensorShard shard_;
  ShardLayout layout_;
  std::vector<float> inv_freq_host_;
  Buffer inv_freq_;
  // Activations, grown on demand (shape comments at their use).
  int workspace_tokens_ = 0;
  int workspace_rows_ = 0;
  Buffer hidden_, normed_, qkv_, q_, k_, v_, attn_, gate_up_, mlp_, last_hidden_, logits_;
  // Split only: this rank's logits (R, ceil(V/tp)) and, on TP rank 0, every
  // rank's (tp, R, ceil(V/tp)); host ids of the vocabulary-parallel lookup.
  Buffer local_logits_, gathered_logits_;
  std::vector<int32_t> local_ids_, reorder_ids_;
  // MoE models only: router logits (T, E), the step's routing, the experts'
  // scratch, and each layer's expert views.
  Buffer router_logits_;
  MoePlan moe_plan_;
  MoeScratch moe_scratch_;
  std::vector<std::vector<MoeExpertWeights>> expert_views_;
  std::vector<float> reorder_host_;
  int logit_rows_ = 0;
  double communication_seconds_ = 0;
};

}  // namespace tandem
