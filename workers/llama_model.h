// LlamaModel: the Llama forward pass over a ragged batch.
//
// One call runs every layer once for several sequences at once, each adding
// one or more tokens at its own positions and attending to its own paged KV
// cache: decode (1 token), verification (γ+1 tokens) and prefill (n tokens)
// are all the same call. Not thread-safe; one engine thread drives a model.
#pragma once

#include <span>
#include <vector>

#include "kernels/backend.h"
#include "workers/kv_cache.h"
#include "workers/llama_weights.h"
#include "workers/model_config.h"

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
  LlamaModel(ModelConfig config, LlamaWeights weights, Backend& backend);

  // Runs the step, appending each sequence's K/V to the cache (the caller has
  // reserved room; an unreserved position is an Error naming the sequence).
  // Returns logits (R, V) in backend memory, valid until the next call: rows
  // in step order, per step the rows of its last logit_count new tokens.
  const float* forward(std::span<const SequenceStep> steps, PagedKvCache& cache);
  // Rows the last forward returned.
  int logit_rows() const { return logit_rows_; }
  // Seconds the last forward spent in tensor-parallel collectives.
  double communication_seconds() const { return 0; }

  const ModelConfig& config() const { return config_; }
  const LlamaWeights& weights() const { return weights_; }
  Backend& backend() { return backend_; }

 private:
  void ensure_workspace(int T, int R);

  ModelConfig config_;
  LlamaWeights weights_;
  Backend& backend_;
  std::vector<float> inv_freq_host_;
  Buffer inv_freq_;
  // Activations, grown on demand (shape comments at their use).
  int workspace_tokens_ = 0;
  int workspace_rows_ = 0;
  Buffer hidden_, normed_, qkv_, q_, k_, v_, attn_, gate_up_, mlp_, last_hidden_, logits_;
  int logit_rows_ = 0;
};

}  // namespace tandem
