// Tensor parallelism (Megatron-style) of the Llama target: which slice of
// every layer one rank owns, computed in one place.
//
// A TP group of `size` ranks splits each layer so that every rank holds about
// 1/size of the weights and of the KV cache:
//   attention  query heads split evenly; KV heads split evenly when K >= tp,
//              else each KV head is replicated on tp/K ranks (the ranks whose
//              query heads form its GQA group);
//   MLP        the intermediate dimension I split evenly;
//   vocabulary rank r owns rows [r*ceil(V/tp), min(V, (r+1)*ceil(V/tp))) of
//              the embedding and the LM head (V need not divide).
// Norms are replicated. The forward pass that uses these slices is in
// llama_model.cpp; the loader that reads them is llama_weights.cpp.
#pragma once

#include <cstdint>

#include "transport/communicator.h"
#include "workers/model_config.h"

namespace tandem {

// This rank's place in the target's tensor-parallel group. The default is
// the unsplit model (one rank, no communicator).
struct TensorShard {
  int rank = 0;
  int size = 1;
  Communicator* comm = nullptr;  // the TP group; null when size == 1
  bool split() const { return size > 1; }
};

// A half-open range [begin, begin + count) of heads, rows or columns.
struct ShardRange {
  int begin = 0;
  int count = 0;
  int end() const { return begin + count; }
};

// The slices of one model that one rank owns. Dimension letters as in
// kernels/backend.h; "local" means this rank's part.
struct ShardLayout {
  ShardRange q_heads;       // of H: H/tp heads
  ShardRange kv_heads;      // of K: K/tp heads, or the 1 replicated head of this rank's group
  ShardRange intermediate;  // of I: I/tp rows of W_gate and W_up, columns of down_proj
  ShardRange vocab;         // of V: rows of embed and lm_head (may be empty when V < tp)
  int vocab_stride = 0;     // ceil(V/tp): vocabulary rows every rank stores and gathers
  int head_dim = 0;         // D

  int q_dim() const { return q_heads.count * head_dim; }    // local H*D
  int kv_dim() const { return kv_heads.count * head_dim; }  // local K*D
};

// Rows [r*ceil(V/tp), min(V, (r+1)*ceil(V/tp))) of the vocabulary: rank r's
// share (empty for the last ranks when V < tp).
ShardRange vocab_rows(int V, int tp, int rank);

// The layout for this rank, or Error(invalid_argument) naming the numbers
// when the model cannot be split tp ways (H or I not divisible by tp, K and
// tp incompatible) or the shard itself is malformed.
ShardLayout shard_layout(const ModelConfig& config, const TensorShard& shard);

}  // namespace tandem
