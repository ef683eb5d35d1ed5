// The split arithmetic of tensor parallelism (see tensor_parallel.h).
#include "workers/tensor_parallel.h"

#include <algorithm>
#include <string>

#include "common/error.h"

namespace tandem {
namespace {

std::string str(int64_t n) { return std::to_string(n); }

void require_shard(const TensorShard& shard) {
  require(shard.size >= 1 && shard.rank >= 0 && shard.rank < shard.size,
          ErrorKind::invalid_argument,
          "tensor-parallel rank " + str(shard.rank) + " of size " + str(shard.size) +
              " is not a valid shard (need 0 <= rank < size)");
  if (!shard.split()) return;
  require(shard.comm != nullptr, ErrorKind::invalid_argument,
          "tensor-parallel size " + str(shard.size) +
              " needs a communicator for the TP group. Hint: pass the group's Communicator");
  require(shard.comm->size() == shard.size && shard.comm->rank() == shard.rank,
          ErrorKind::invalid_argument,
          "tensor shard says rank " + str(shard.rank) + " of " + str(shard.size) +
              " but its communicator is rank " + str(shard.comm->rank()) + " of " +
              str(shard.comm->size()));
}

}  // namespace

ShardRange vocab_rows(int V, int tp, int rank) {
  const int stride = (V + tp - 1) / tp;
  const int v0 = std::min(V, rank * stride), v1 = std::min(V, (rank + 1) * stride);
  return {v0, v1 - v0};
}

ShardLayout shard_layout(const ModelConfig& config, const TensorShard& shard) {
  require_shard(shard);
  const int tp = shard.size, r = shard.rank;
  const int H = config.num_heads, K = config.num_kv_heads, I = config.intermediate_size;
  const int V = config.vocab_size;
  const std::string model = config.architecture.empty() ? "the model" : config.architecture;
  require(H > 0 && K > 0 && H % K == 0, ErrorKind::invalid_argument,
          model + " has " + str(H) + " query heads and " + str(K) +
              " KV heads; the KV heads must divide the query heads");
  require(H % tp == 0, ErrorKind::invalid_argument, [&] {
    return "tensor-parallel size " + str(tp) + " does not divide num_attention_heads " + str(H) +
           " of " + model + ". Hint: choose a TP size that divides " + str(H);
  });
  require(I % tp == 0, ErrorKind::invalid_argument, [&] {
    // A MoE model splits every expert's FFN alike, so its expert size must divide.
    return "tensor-parallel size " + str(tp) + " does not divide " + config.intermediate_key() +
           " " + str(I) + (config.is_moe() ? " (each expert's FFN is split like a dense MLP)" : "") +
           " of " + model + ". Hint: choose a TP size that divides " + str(I);
  });
  if (K >= tp) {
    require(K % tp == 0, ErrorKind::invalid_argument, [&] {
      return "tensor-parallel size " + str(tp) + " does not divide num_key_value_heads " +
             str(K) + " of " + model + ". Hint: choose a TP size that divides " + str(K) +
             " or a multiple of it";
    });
  } else {
    require(tp % K == 0, ErrorKind::invalid_argument, [&] {
      return "tensor-parallel size " + str(tp) + " is not a multiple of num_key_value_heads " +
             str(K) + " of " + model + ", so KV heads cannot be replicated evenly. Hint: "
             "choose a TP size that divides " + str(K) + " or a multiple of it";
    });
  }

  ShardLayout layout;
  layout.head_dim = config.head_dim;
  layout.q_heads = {r * (H / tp), H / tp};
  // K >= tp: K/tp heads each. K < tp: ranks r*K/tp.. share KV head r*K/tp
  // (integer division), which is exactly the head of their query heads' group.
  layout.kv_heads = K >= tp ? ShardRange{r * (K / tp), K / tp} : ShardRange{r * K / tp, 1};
  layout.intermediate = {r * (I / tp), I / tp};
  layout.vocab_stride = (V + tp - 1) / tp;
  layout.vocab = vocab_rows(V, tp, r);

  // Every local query head must read a local KV head (GQA groups stay whole).
  const int group = H / K;
  require(layout.q_heads.begin / group >= layout.kv_heads.begin &&
              (layout.q_heads.end() - 1) / group < layout.kv_heads.end(),
          ErrorKind::internal, [&] {
            return "rank " + str(r) + " of " + str(tp) + ": query heads [" +
                   str(layout.q_heads.begin) + ", " + str(layout.q_heads.end()) +
                   ") use KV heads outside its own [" + str(layout.kv_heads.begin) + ", " +
                   str(layout.kv_heads.end()) + ")";
          });
  return layout;
}

}  // namespace tandem
