// ModelConfig: the architecture of a Llama-family checkpoint, read from a
// Hugging Face config.json (LlamaForCausalLM, MistralForCausalLM,
// Qwen2ForCausalLM, which adds q/k/v biases, and Qwen3ForCausalLM, which adds
// a per-head RMSNorm of queries and keys before RoPE and usually an explicit
// head_dim other than hidden_size / num_attention_heads), and the sparse
// mixture-of-experts MixtralForCausalLM and Qwen3MoeForCausalLM (Qwen3's
// attention), whose every layer's MLP is E SwiGLU experts of which a router
// picks top_k per token.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace tandem {

struct RopeScaling {
  enum class Type { none, llama3 };
  Type type = Type::none;
  double factor = 1.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int original_max_position_embeddings = 8192;
};

struct ModelConfig {
  std::string architecture;  // e.g. "LlamaForCausalLM"
  int hidden_size = 0;         // C
  // I: the dense MLP's intermediate size, or each expert's in a MoE model
  // (Mixtral's intermediate_size, Qwen3-MoE's moe_intermediate_size).
  int intermediate_size = 0;
  int num_layers = 0;
  int num_heads = 0;           // H
  int num_kv_heads = 0;        // K
  int head_dim = 0;            // D (hidden_size / num_heads unless given)
  int vocab_size = 0;          // V
  int max_position_embeddings = 0;
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;
  bool tie_word_embeddings = false;
  bool attention_bias = false;  // q/k/v projections carry biases (Qwen2)
  // Each head's D query and key values are RMS-normalized (weights q_norm,
  // k_norm, eps rms_norm_eps) after the projection and before RoPE (Qwen3).
  bool qk_norm = false;
  // Sparse MoE (0 experts: a dense MLP). Every layer routes each token to
  // its moe_top_k most probable of num_experts experts, weighted by their
  // softmax probabilities, renormalised to sum 1 when moe_norm_topk_prob
  // (Mixtral always; Qwen3-MoE per its norm_topk_prob).
  int num_experts = 0;          // E
  int moe_top_k = 0;            // num_experts_per_tok
  bool moe_norm_topk_prob = false;
  int bos_token_id = -1;        // -1: none
  std::vector<int> eos_token_ids;

  int q_dim() const { return num_heads * head_dim; }
  int kv_dim() const { return num_kv_heads * head_dim; }
  bool is_moe() const { return num_experts > 0; }
  // The config key I came from, for messages (moe_intermediate_size for Qwen3-MoE).
  const char* intermediate_key() const;
  // Parameters in the checkpoint (embedding and LM head counted once if tied).
  int64_t parameter_count() const;
  // Parameters one token's forward pass uses: all but the experts its router
  // did not choose (the whole model when dense; the embedding counted once).
  int64_t active_parameter_count() const;
};

// Parses dir/config.json. Errors name the file and the offending key.
ModelConfig load_model_config(const std::filesystem::path& model_dir);
ModelConfig parse_model_config(const std::string& json_text, const std::string& source_name);

// Rotary inverse frequencies (D/2), with llama3 scaling applied when configured.
std::vector<float> rope_inv_freq(const ModelConfig& config);

}  // namespace tandem
