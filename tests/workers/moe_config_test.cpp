// ModelConfig of the sparse mixture-of-experts architectures: Mixtral-8x7B's
// and Qwen3-30B-A3B's published config.json files (their parameter counts,
// total and active, against the model cards), the shapes files for dummy
// weights, and the refusals that name the key.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "workers/model_config.h"

namespace tandem {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;

// Mixtral-8x7B-v0.1's config.json.
json mixtral_8x7b() {
  return json::parse(R"({
    "architectures": ["MixtralForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 1,
    "eos_token_id": 2, "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02,
    "intermediate_size": 14336, "max_position_embeddings": 32768, "model_type": "mixtral",
    "num_attention_heads": 32, "num_experts_per_tok": 2, "num_hidden_layers": 32,
    "num_key_value_heads": 8, "num_local_experts": 8, "output_router_logits": false,
    "rms_norm_eps": 1e-05, "rope_theta": 1000000.0, "router_aux_loss_coef": 0.02,
    "sliding_window": null, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
    "use_cache": true, "vocab_size": 32000})");
}

// Qwen3-30B-A3B's config.json.
json qwen3_30b_a3b() {
  return json::parse(R"({
    "architectures": ["Qwen3MoeForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
    "bos_token_id": 151643, "decoder_sparse_step": 1, "eos_token_id": 151645, "head_dim": 128,
    "hidden_act": "silu", "hidden_size": 2048, "initializer_range": 0.02,
    "intermediate_size": 6144, "max_position_embeddings": 40960, "max_window_layers": 48,
    "mlp_only_layers": [], "model_type": "qwen3_moe", "moe_intermediate_size": 768,
    "norm_topk_prob": true, "num_attention_heads": 32, "num_experts": 128,
    "num_experts_per_tok": 8, "num_hidden_layers": 48, "num_key_value_heads": 4,
    "output_router_logits": false, "rms_norm_eps": 1e-06, "rope_scaling": null,
    "rope_theta": 1000000.0, "router_aux_loss_coef": 0.001, "sliding_window": null,
    "tie_word_embeddings": false, "torch_dtype": "bfloat16", "use_cache": true,
    "use_sliding_window": false, "vocab_size": 151936})");
}

ModelConfig parse_config(const json& j) { return parse_model_config(j.dump(), "test/config.json"); }

Error config_error(const json& j) {
  try {
    parse_config(j);
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "no Error for: " << j.dump();
  return Error(ErrorKind::internal, "");
}

// Rounds to the model cards' one decimal of billions.
double billions(int64_t n) { return static_cast<double>((n + 50'000'000) / 100'000'000) / 10; }

TEST(MoeConfig, ParsesMixtral8x7b) {
  const ModelConfig c = parse_config(mixtral_8x7b());
  EXPECT_EQ(c.architecture, "MixtralForCausalLM");
  EXPECT_TRUE(c.is_moe());
  EXPECT_EQ(c.num_experts, 8);
  EXPECT_EQ(c.moe_top_k, 2);
  EXPECT_TRUE(c.moe_norm_topk_prob);  // Mixtral always renormalises its top-k
  EXPECT_EQ(c.intermediate_size, 14336);  // each expert's
  EXPECT_FALSE(c.qk_norm);
  EXPECT_EQ(c.num_kv_heads, 8);
  EXPECT_EQ(c.head_dim, 128);
  // Mistral's model card: 46.7B parameters, 12.9B used per token. Exactly:
  // 32 layers of attention (4096 x 6144 qkv, 4096 x 4096 o_proj, two norms)
  // and 8 experts (3 x 4096 x 14336) with a 4096-wide router row each, the
  // untied 32000-row embedding and LM head, and the final norm.
  EXPECT_EQ(c.parameter_count(), 46702792704);
  EXPECT_EQ(c.active_parameter_count(), 46702792704 - int64_t{32} * 6 * 3 * 4096 * 14336);
  EXPECT_DOUBLE_EQ(billions(c.parameter_count()), 46.7);
  EXPECT_DOUBLE_EQ(billions(c.active_parameter_count()), 12.9);
  EXPECT_STREQ(c.intermediate_key(), "intermediate_size");
}

TEST(MoeConfig, ParsesQwen3_30bA3b) {
  const ModelConfig c = parse_config(qwen3_30b_a3b());
  EXPECT_EQ(c.architecture, "Qwen3MoeForCausalLM");
  EXPECT_EQ(c.num_experts, 128);
  EXPECT_EQ(c.moe_top_k, 8);
  EXPECT_TRUE(c.moe_norm_topk_prob);
  EXPECT_EQ(c.intermediate_size, 768);  // moe_intermediate_size, not the dense 6144
  EXPECT_STREQ(c.intermediate_key(), "moe_intermediate_size");
  EXPECT_TRUE(c.qk_norm);  // Qwen3's attention
  EXPECT_EQ(c.num_kv_heads, 4);
  EXPECT_EQ(c.q_dim(), 4096);
  // The model card: 30.5B parameters, 3.3B activated.
  EXPECT_EQ(c.parameter_count(), 30532122624);
  EXPECT_EQ(c.active_parameter_count(), 30532122624 - int64_t{48} * 120 * 3 * 2048 * 768);
  EXPECT_DOUBLE_EQ(billions(c.parameter_count()), 30.5);
  EXPECT_DOUBLE_EQ(billions(c.active_parameter_count()), 3.4);  // 3.35B; the card rounds down
  // Hugging Face's default norm_topk_prob is false (Qwen3MoeConfig).
  json j = qwen3_30b_a3b();
  j.erase("norm_topk_prob");
  EXPECT_FALSE(parse_config(j).moe_norm_topk_prob);
  // A dense model's active count is its total.
  j = mixtral_8x7b();
  j["architectures"] = {"MistralForCausalLM"};
  const ModelConfig dense = parse_config(j);
  EXPECT_FALSE(dense.is_moe());
  EXPECT_EQ(dense.active_parameter_count(), dense.parameter_count());
}

TEST(MoeConfig, ShapesForDummyWeightsParse) {
  const std::filesystem::path shapes = std::filesystem::path(TANDEM_SOURCE_DIR) / "configs/shapes";
  auto read = [&](const char* name) {
    std::ifstream in(shapes / name);
    std::stringstream text;
    text << in.rdbuf();
    return parse_model_config(text.str(), name);
  };
  const ModelConfig qwen = read("qwen3-30b-a3b.json");
  EXPECT_EQ(qwen.parameter_count(), parse_config(qwen3_30b_a3b()).parameter_count());
  EXPECT_EQ(qwen.active_parameter_count(), parse_config(qwen3_30b_a3b()).active_parameter_count());
  EXPECT_TRUE(qwen.moe_norm_topk_prob);
  const ModelConfig mixtral = read("mixtral-8x7b.json");
  EXPECT_EQ(mixtral.parameter_count(), parse_config(mixtral_8x7b()).parameter_count());
  EXPECT_EQ(mixtral.num_experts, 8);
  EXPECT_EQ(mixtral.moe_top_k, 2);
  // The benchmark pair of `tandem-bench steps --compare-dummy`: Qwen3-MoE's
  // 128 experts top-8 scaled down, and the dense model of its active size
  // (an MLP as wide as 8 experts), which differ by the routers alone.
  const ModelConfig moe = read("bench-moe-128x8.json");
  const ModelConfig dense = read("bench-moe-dense-twin.json");
  EXPECT_EQ(moe.num_experts, 128);
  EXPECT_EQ(moe.moe_top_k, 8);
  EXPECT_EQ(dense.intermediate_size, moe.moe_top_k * moe.intermediate_size);
  EXPECT_EQ(moe.active_parameter_count() - dense.parameter_count(),
            int64_t{moe.num_layers} * moe.num_experts * moe.hidden_size);
}

TEST(MoeConfig, RefusalsNameTheKey) {
  auto refused = [](const json& j, const char* key, ErrorKind kind = ErrorKind::unsupported) {
    const Error e = config_error(j);
    EXPECT_EQ(e.kind(), kind) << key;
    EXPECT_THAT(e.what(), HasSubstr(std::string("'") + key + "'"));
    EXPECT_THAT(e.what(), HasSubstr("Hint:"));
  };
  json j = qwen3_30b_a3b();
  j["decoder_sparse_step"] = 2;
  refused(j, "decoder_sparse_step");
  j = qwen3_30b_a3b();
  j["mlp_only_layers"] = {0, 47};
  refused(j, "mlp_only_layers");
  j = qwen3_30b_a3b();
  j["shared_expert_intermediate_size"] = 5632;  // Qwen2-MoE's shared expert
  refused(j, "shared_expert_intermediate_size");
  j = mixtral_8x7b();
  j["n_shared_experts"] = 2;  // DeepSeek's
  refused(j, "n_shared_experts");
  j["n_shared_experts"] = 0;  // none is fine
  EXPECT_NO_THROW(parse_config(j));
  j = qwen3_30b_a3b();
  j["kv_lora_rank"] = 512;  // DeepSeek's latent attention
  refused(j, "kv_lora_rank");
  j = qwen3_30b_a3b();
  j["q_lora_rank"] = 1536;
  refused(j, "q_lora_rank");
  j = mixtral_8x7b();
  j["num_experts_per_tok"] = 9;
  refused(j, "num_experts_per_tok", ErrorKind::invalid_argument);
  j = mixtral_8x7b();
  j["num_local_experts"] = 0;
  refused(j, "num_local_experts", ErrorKind::invalid_argument);
  j = qwen3_30b_a3b();
  j.erase("moe_intermediate_size");
  refused(j, "moe_intermediate_size", ErrorKind::invalid_argument);
  j = mixtral_8x7b();
  j["sliding_window"] = 4096;  // Mixtral's window, when given, is used
  refused(j, "sliding_window");
  j = mixtral_8x7b();
  j["architectures"] = {"DeepseekV3ForCausalLM"};
  refused(j, "architectures");
}

}  // namespace
}  // namespace tandem
