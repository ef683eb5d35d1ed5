// LlamaWeights: one model's weights in backend memory, in the layout the
// forward pass wants.
//
// Fused at load time so that each step issues fewer, larger GEMMs:
//   qkv     (q_dim + 2*kv_dim, C)  rows [Wq; Wk; Wv]      bias likewise (Qwen2)
//   gate_up (2I, C)                rows [W_gate; W_up]
// Everything else keeps its Hugging Face shape. With tied embeddings,
// lm_head is empty and the forward pass uses embed.
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

#include "kernels/backend.h"
#include "workers/model_config.h"

namespace tandem {

struct LlamaLayerWeights {
  Buffer attn_norm;  // (C)
  Buffer qkv;        // (q_dim + 2*kv_dim, C)
  Buffer qkv_bias;   // (q_dim + 2*kv_dim) or empty
  Buffer o_proj;     // (C, q_dim)
  Buffer mlp_norm;   // (C)
  Buffer gate_up;    // (2I, C)
  Buffer down_proj;  // (C, I)
};

struct LlamaWeights {
  Buffer embed;       // (V, C)
  std::vector<LlamaLayerWeights> layers;
  Buffer final_norm;  // (C)
  Buffer lm_head;     // (V, C), empty when tied
  const float* lm_head_or_embed() const { return lm_head.empty() ? embed.data() : lm_head.data(); }
  // Bytes of weights one forward step reads (the LM head once even if tied).
  int64_t bytes_read_per_step() const;
};

// Reads a Hugging Face checkpoint directory (model.safetensors or the shards
// named by model.safetensors.index.json), converts F32/F16/BF16 to f32 and
// checks every shape against the config. Errors name the file and tensor.
LlamaWeights load_llama_weights(const std::filesystem::path& model_dir, const ModelConfig& config,
                                Backend& backend);

// Random weights of the configured shape (the `dummy` load format): normal
// with std 0.02 for matrices, ones for norms; deterministic in seed.
LlamaWeights make_dummy_weights(const ModelConfig& config, uint64_t seed, Backend& backend);

}  // namespace tandem
