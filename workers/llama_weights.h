// LlamaWeights: one model's weights in backend memory, in the layout the
// forward pass wants.
//
// Fused at load time so that each step issues fewer, larger GEMMs:
//   qkv     (q_dim + 2*kv_dim, C)  rows [Wq; Wk; Wv]      bias likewise (Qwen2)
//   gate_up (2I, C)                rows [W_gate; W_up]
// Everything else keeps its Hugging Face shape. With tied embeddings,
// lm_head is empty and the forward pass uses embed.
//
// A tensor-parallel shard (workers/tensor_parallel.h) holds only its slices,
// Megatron-style; shapes below are local, in the letters of ShardLayout
// (unsplit: every local size equals the full one):
//   qkv        rows of its query heads, then of its KV heads (k, then v):
//              weight split along its output dimension (column-parallel)
//   gate_up    its I/tp rows of W_gate, then the same rows of W_up (column-parallel)
//   o_proj     its q_dim columns; down_proj its I/tp columns: weight split
//              along its input dimension (row-parallel), output all-reduced
//   embed, lm_head  its vocabulary rows, zero-padded to ceil(V/tp) rows so
//              every rank's LM-head output has the same width
//   norms      replicated; so are q_norm and k_norm (Qwen3), which weight
//              each head's D values alike, whichever rank holds the head
//   MoE        (Mixtral, Qwen3-MoE) the router replicated; every expert's
//              gate_up and down split like the dense MLP's (its I/tp rows,
//              columns), so each rank runs every expert on its slice and the
//              layer's output is all-reduced once, as the dense MLP's
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

#include "kernels/backend.h"
#include "kernels/moe.h"
#include "workers/model_config.h"
#include "workers/tensor_parallel.h"

namespace tandem {

// Matrices (qkv, o_proj, gate_up, down_proj, embed, lm_head) are in the
// backend's weight dtype; norms and biases are f32.
struct LlamaLayerWeights {
  Buffer attn_norm;  // (C)
  Buffer qkv;        // (q_dim + 2*kv_dim, C), local dims
  Buffer qkv_bias;   // (q_dim + 2*kv_dim) or empty
  Buffer q_norm;     // (D), shared by every query head, or empty (no qk_norm)
  Buffer k_norm;     // (D), shared by every key head, or empty
  Buffer o_proj;     // (C, q_dim)
  Buffer mlp_norm;   // (C)
  Buffer gate_up;    // (2I, C), local I; empty in a MoE layer
  Buffer down_proj;  // (C, I); empty in a MoE layer
  // Sparse MoE layers only (ModelConfig::is_moe). The router is f32 on every
  // backend: an (E, C) matrix is small, and rounding it to bf16 could
  // reorder a token's near-tied experts.
  Buffer router;                       // (E, C) f32, replicated
  std::vector<Buffer> expert_gate_up;  // E of (2I, C): [W_gate; W_up], local I
  std::vector<Buffer> expert_down;     // E of (C, I)
  // Views of the experts for moe_experts(); empty when dense.
  std::vector<MoeExpertWeights> expert_views() const;
};

struct LlamaWeights {
  Buffer embed;       // (ceil(V/tp), C): V rows when unsplit
  std::vector<LlamaLayerWeights> layers;
  Buffer final_norm;  // (C)
  Buffer lm_head;     // like embed, empty when tied
  // Checkpoint bytes (stored dtype) this rank read to build these weights;
  // 0 for dummy weights.
  int64_t checkpoint_bytes_read = 0;
  WeightView lm_head_or_embed() const { return lm_head.empty() ? embed.view() : lm_head.view(); }
  // Bytes of weights one forward step reads (the LM head once even if tied;
  // every expert of a MoE layer, which a step reads when its tokens choose
  // them all, so a MoE decode step of few tokens reads less).
  int64_t bytes_read_per_step() const;
};

// Reads a Hugging Face checkpoint directory (model.safetensors or the shards
// named by model.safetensors.index.json), converts F32/F16/BF16 to f32 and
// checks every shape against the config. Errors name the file and tensor.
// A shard reads only its own slices of the memory-mapped files.
LlamaWeights load_llama_weights(const std::filesystem::path& model_dir, const ModelConfig& config,
                                Backend& backend, const TensorShard& shard = {});

// Random weights of the configured shape (the `dummy` load format): normal
// with std 0.02 for matrices, ones for norms; deterministic in seed. A
// shard's weights are exactly the slices of the unsplit model with the same
// seed, so every TP degree runs the same model.
LlamaWeights make_dummy_weights(const ModelConfig& config, uint64_t seed, Backend& backend,
                                const TensorShard& shard = {});

}  // namespace tandem
