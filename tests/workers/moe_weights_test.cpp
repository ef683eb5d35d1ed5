// Loading sparse MoE checkpoints under Hugging Face's per-expert tensor
// names (Mixtral's block_sparse_moe.experts.E.w1/w3/w2, Qwen3-MoE's
// mlp.experts.E.gate_proj/up_proj/down_proj, and the router `gate` of
// each), written here: every expert lands fused as [gate; up] and down; a
// tensor-parallel rank holds the whole router and its I/tp slice of every
// expert, and reads about half the expert bytes at TP 2; a missing expert
// tensor is named. (tests/workers/llama_forward_test.cpp runs such
// checkpoints against the NumPy reference.)
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "common/error.h"
#include "safetensors_writer.h"
#include "tests/support/thread_communicator.h"
#include "workers/llama_weights.h"

namespace tandem {
namespace {

using ::testing::HasSubstr;
using testing_util::f32_bytes;
using testing_util::TempDir;
using testing_util::TestTensor;
using testing_util::write_index;
using testing_util::write_safetensors;

// C 16, 2 layers, H 2 over K 1 (D 8), V 24, E 4 experts of width I 8, top-2.
ModelConfig moe_config(const char* arch) {
  const bool mixtral = std::string(arch) == "MixtralForCausalLM";
  nlohmann::json j = {{"architectures", {arch}}, {"hidden_size", 16}, {"num_hidden_layers", 2},
                      {"num_attention_heads", 2}, {"num_key_value_heads", 1},
                      {"head_dim", 8}, {"vocab_size", 24}, {"max_position_embeddings", 64},
                      {"num_experts_per_tok", 2}, {"tie_word_embeddings", true}};
  j[mixtral ? "intermediate_size" : "moe_intermediate_size"] = 8;
  j[mixtral ? "num_local_experts" : "num_experts"] = 4;
  if (!mixtral) j["intermediate_size"] = 40;  // the dense width, unused
  return parse_model_config(j.dump(), "moe/config.json");
}

// Each tensor's name, shape and distinct random values.
struct Checkpoint {
  std::map<std::string, std::vector<float>> values;
  std::map<std::string, std::vector<int64_t>> shapes;
  std::mt19937 rng{11};
  void add(const std::string& name, std::vector<int64_t> shape) {
    std::uniform_real_distribution<float> dist(-1, 1);
    std::vector<float> v(static_cast<size_t>(shape[0] * (shape.size() > 1 ? shape[1] : 1)));
    for (float& x : v) x = dist(rng);
    values[name] = v;
    shapes[name] = std::move(shape);
  }
  std::vector<TestTensor> tensors(const std::vector<std::string>& names) const {
    std::vector<TestTensor> out;
    for (const auto& n : names) out.push_back({n, "F32", shapes.at(n), f32_bytes(values.at(n))});
    return out;
  }
};

// The expert names of an architecture: block, gate, up, down.
struct ExpertNames {
  std::string block, gate, up, down;
};
ExpertNames expert_names(const ModelConfig& c) {
  if (c.architecture == "MixtralForCausalLM") return {"block_sparse_moe.", "w1", "w3", "w2"};
  return {"mlp.", "gate_proj", "up_proj", "down_proj"};
}

Checkpoint make_checkpoint(const ModelConfig& c) {
  Checkpoint ck;
  const int64_t C = c.hidden_size, I = c.intermediate_size;
  const ExpertNames n = expert_names(c);
  ck.add("model.embed_tokens.weight", {c.vocab_size, C});
  ck.add("model.norm.weight", {C});
  for (int l = 0; l < c.num_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    ck.add(p + "input_layernorm.weight", {C});
    ck.add(p + "post_attention_layernorm.weight", {C});
    for (const char* proj : {"q_proj", "k_proj", "v_proj"}) {
      ck.add(p + "self_attn." + proj + ".weight", {proj[0] == 'q' ? c.q_dim() : c.kv_dim(), C});
    }
    ck.add(p + "self_attn.o_proj.weight", {C, c.q_dim()});
    if (c.qk_norm) {
      ck.add(p + "self_attn.q_norm.weight", {c.head_dim});
      ck.add(p + "self_attn.k_norm.weight", {c.head_dim});
    }
    ck.add(p + n.block + "gate.weight", {c.num_experts, C});
    for (int e = 0; e < c.num_experts; ++e) {
      const std::string x = p + n.block + "experts." + std::to_string(e) + ".";
      ck.add(x + n.gate + ".weight", {I, C});
      ck.add(x + n.up + ".weight", {I, C});
      ck.add(x + n.down + ".weight", {C, I});
    }
  }
  return ck;
}

std::vector<float> read_back(Backend& backend, const Buffer& buffer) {
  std::vector<float> out(buffer.size());
  if (!out.empty()) backend.download(buffer.data(), out);
  return out;
}

// Rows [r0, r1) of a (rows, cols) matrix; columns [c0, c1) of one.
std::vector<float> rows_of(const std::vector<float>& m, int64_t cols, int64_t r0, int64_t r1) {
  return std::vector<float>(m.begin() + r0 * cols, m.begin() + r1 * cols);
}
std::vector<float> cols_of(const std::vector<float>& m, int64_t cols, int64_t c0, int64_t c1) {
  std::vector<float> out;
  for (size_t r = 0; r < m.size() / static_cast<size_t>(cols); ++r) {
    out.insert(out.end(), m.begin() + static_cast<int64_t>(r) * cols + c0,
               m.begin() + static_cast<int64_t>(r) * cols + c1);
  }
  return out;
}

class MoeWeights : public ::testing::TestWithParam<const char*> {};

TEST_P(MoeWeights, ExpertsLoadFusedAndEachRankReadsOnlyItsSlices) {
  const ModelConfig c = moe_config(GetParam());
  const Checkpoint ck = make_checkpoint(c);
  const ExpertNames n = expert_names(c);
  // Two files, the tensors dealt alternately: an expert's three matrices
  // straddle the files.
  TempDir dir;
  std::map<std::string, std::vector<std::string>> files;
  int i = 0;
  for (const auto& [name, v] : ck.values) {
    files[i++ % 2 ? "model-00002-of-00002.safetensors" : "model-00001-of-00002.safetensors"]
        .push_back(name);
  }
  for (const auto& [file, names] : files) write_safetensors(dir / file, ck.tensors(names));
  write_index(dir.path(), files);

  auto backend = make_cpu_backend();
  const int64_t C = 16, I = 8;
  std::vector<int64_t> bytes;
  for (int tp : {1, 2}) {
    test_support::ThreadGroup group(tp);
    for (int r = 0; r < tp; ++r) {
      SCOPED_TRACE("TP " + std::to_string(tp) + " rank " + std::to_string(r));
      test_support::ThreadCommunicator comm(group, r);
      const TensorShard shard{r, tp, tp > 1 ? &comm : nullptr};
      const LlamaWeights w = load_llama_weights(dir.path(), c, *backend, shard);
      bytes.push_back(w.checkpoint_bytes_read);
      const int64_t i0 = r * I / tp, i1 = (r + 1) * I / tp;
      for (int l = 0; l < c.num_layers; ++l) {
        const LlamaLayerWeights& lw = w.layers[static_cast<size_t>(l)];
        const std::string p = "model.layers." + std::to_string(l) + "." + n.block;
        EXPECT_TRUE(lw.gate_up.empty());
        EXPECT_EQ(read_back(*backend, lw.router), ck.values.at(p + "gate.weight"));  // whole
        ASSERT_EQ(lw.expert_gate_up.size(), 4u);
        for (int e = 0; e < 4; ++e) {
          const std::string x = p + "experts." + std::to_string(e) + ".";
          std::vector<float> gate_up = rows_of(ck.values.at(x + n.gate + ".weight"), C, i0, i1);
          const auto up = rows_of(ck.values.at(x + n.up + ".weight"), C, i0, i1);
          gate_up.insert(gate_up.end(), up.begin(), up.end());
          EXPECT_EQ(read_back(*backend, lw.expert_gate_up[static_cast<size_t>(e)]), gate_up);
          EXPECT_EQ(read_back(*backend, lw.expert_down[static_cast<size_t>(e)]),
                    cols_of(ck.values.at(x + n.down + ".weight"), I, i0, i1));
        }
      }
      if (tp == 1) {
        EXPECT_EQ(w.bytes_read_per_step(), c.parameter_count() * 4);
      }
    }
  }
  // TP 2: each rank reads the replicated router, norms and embedding-free
  // rest plus half the experts: well under the whole's 60 %.
  std::printf("bytes read: TP 1 %lld, TP 2 ranks %lld %lld\n", static_cast<long long>(bytes[0]),
              static_cast<long long>(bytes[1]), static_cast<long long>(bytes[2]));
  EXPECT_LT(bytes[1], bytes[0] * 0.6);
  EXPECT_LT(bytes[2], bytes[0] * 0.6);
}

TEST_P(MoeWeights, MissingExpertTensorIsNamed) {
  const ModelConfig c = moe_config(GetParam());
  const Checkpoint ck = make_checkpoint(c);
  const std::string missing =
      "model.layers.1." + expert_names(c).block + "experts.3." + expert_names(c).down + ".weight";
  std::vector<std::string> names;
  for (const auto& [name, v] : ck.values)
    if (name != missing) names.push_back(name);
  TempDir dir;
  write_safetensors(dir / "model.safetensors", ck.tensors(names));
  auto backend = make_cpu_backend();
  try {
    load_llama_weights(dir.path(), c, *backend);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::not_found);
    EXPECT_THAT(e.what(), HasSubstr(missing));
  }
}

INSTANTIATE_TEST_SUITE_P(Architectures, MoeWeights,
                         ::testing::Values("MixtralForCausalLM", "Qwen3MoeForCausalLM"),
                         [](const ::testing::TestParamInfo<const char*>& param) {
                           return std::string(param.param).substr(0, 7);
                         });

TEST(MoeDummyWeights, ShapesAndDeterminism) {
  ModelConfig c = moe_config("Qwen3MoeForCausalLM");
  auto backend = make_cpu_backend();
  const LlamaWeights a = make_dummy_weights(c, 3, *backend);
  const LlamaWeights b = make_dummy_weights(c, 3, *backend);
  ASSERT_EQ(a.layers[1].expert_gate_up.size(), 4u);
  EXPECT_EQ(a.layers[1].router.size(), 4u * 16);
  EXPECT_EQ(a.layers[1].router.dtype(), Dtype::f32);
  EXPECT_EQ(a.layers[1].expert_gate_up[3].size(), 2u * 8 * 16);
  EXPECT_EQ(a.layers[1].expert_down[3].size(), 16u * 8);
  EXPECT_EQ(read_back(*backend, a.layers[1].expert_down[3]), read_back(*backend, b.layers[1].expert_down[3]));
  // Experts differ from each other.
  EXPECT_NE(read_back(*backend, a.layers[1].expert_down[2]), read_back(*backend, a.layers[1].expert_down[3]));
  EXPECT_EQ(a.bytes_read_per_step(), c.parameter_count() * 4);  // tied
}

}  // namespace
}  // namespace tandem
