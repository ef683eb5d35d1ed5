// LlamaWeights: loading a tiny checkpoint written here (fused layouts,
// tied/untied heads, Qwen2 biases, Qwen3 q/k norms, sharding, shape errors) and the `dummy`
// random weights (shapes, determinism, speed).
#include "workers/llama_weights.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <map>
#include <random>

#include "common/error.h"
#include "safetensors_writer.h"
#include "tests/support/thread_communicator.h"

namespace tandem {
namespace {

using ::testing::HasSubstr;
using testing_util::f32_bytes;
using testing_util::TempDir;
using testing_util::TestTensor;
using testing_util::u16_bytes;
using testing_util::write_file;
using testing_util::write_index;
using testing_util::write_safetensors;

// C 8, I 12, H 2, K 1, D 4 (q_dim 8, kv_dim 4), V 16, 2 layers: GQA and a
// fused qkv of 16 rows.
ModelConfig tiny_config(const char* arch = "LlamaForCausalLM", bool tie = false) {
  nlohmann::json j = {{"architectures", {arch}}, {"hidden_size", 8}, {"intermediate_size", 12},
                      {"num_hidden_layers", 2}, {"num_attention_heads", 2},
                      {"num_key_value_heads", 1}, {"head_dim", 4}, {"vocab_size", 16},
                      {"max_position_embeddings", 64}, {"tie_word_embeddings", tie}};
  return parse_model_config(j.dump(), "tiny/config.json");
}

// Every tensor of a checkpoint for `config`, by name, with distinct random
// values. The embedding is stored as BF16 (values chosen exactly
// representable) so that conversion runs on the load path too.
struct TinyCheckpoint {
  std::map<std::string, std::vector<float>> values;
  std::map<std::string, std::vector<int64_t>> shapes;
  std::map<std::string, std::string> dtypes;

  void add(const std::string& name, std::vector<int64_t> shape, std::mt19937& rng,
           const std::string& dtype = "F32") {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    std::vector<float> v(static_cast<size_t>(n));
    // k/64 for small k: exact in f32 and bf16.
    std::uniform_int_distribution<int> dist(-64, 64);
    for (float& x : v) x = static_cast<float>(dist(rng)) / 64.0f;
    values[name] = v;
    shapes[name] = std::move(shape);
    dtypes[name] = dtype;
  }

  std::vector<TestTensor> tensors(const std::vector<std::string>& names) const {
    std::vector<TestTensor> out;
    for (const std::string& name : names) {
      const std::vector<float>& v = values.at(name);
      std::string bytes;
      if (dtypes.at(name) == "BF16") {
        std::vector<uint16_t> bits;
        for (float x : v) bits.push_back(static_cast<uint16_t>(std::bit_cast<uint32_t>(x) >> 16));
        bytes = u16_bytes(bits);
      } else {
        bytes = f32_bytes(v);
      }
      out.push_back({name, dtypes.at(name), shapes.at(name), bytes});
    }
    return out;
  }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& [name, v] : values) out.push_back(name);
    return out;
  }
};

TinyCheckpoint make_checkpoint(const ModelConfig& c, bool with_lm_head) {
  std::mt19937 rng(7);
  TinyCheckpoint ck;
  const int64_t C = c.hidden_size, I = c.intermediate_size, V = c.vocab_size;
  ck.add("model.embed_tokens.weight", {V, C}, rng, "BF16");
  for (int l = 0; l < c.num_layers; ++l) {
    std::string p = "model.layers." + std::to_string(l) + ".";
    ck.add(p + "input_layernorm.weight", {C}, rng);
    ck.add(p + "self_attn.q_proj.weight", {c.q_dim(), C}, rng);
    ck.add(p + "self_attn.k_proj.weight", {c.kv_dim(), C}, rng);
    ck.add(p + "self_attn.v_proj.weight", {c.kv_dim(), C}, rng);
    if (c.attention_bias) {
      ck.add(p + "self_attn.q_proj.bias", {c.q_dim()}, rng);
      ck.add(p + "self_attn.k_proj.bias", {c.kv_dim()}, rng);
      ck.add(p + "self_attn.v_proj.bias", {c.kv_dim()}, rng);
    }
    if (c.qk_norm) {
      ck.add(p + "self_attn.q_norm.weight", {c.head_dim}, rng);
      ck.add(p + "self_attn.k_norm.weight", {c.head_dim}, rng);
    }
    ck.add(p + "self_attn.o_proj.weight", {C, c.q_dim()}, rng);
    ck.add(p + "post_attention_layernorm.weight", {C}, rng);
    ck.add(p + "mlp.gate_proj.weight", {I, C}, rng);
    ck.add(p + "mlp.up_proj.weight", {I, C}, rng);
    ck.add(p + "mlp.down_proj.weight", {C, I}, rng);
  }
  ck.add("model.norm.weight", {C}, rng);
  if (with_lm_head) ck.add("lm_head.weight", {V, C}, rng);
  return ck;
}

// Rank `rank` of a 2-way tensor-parallel group. Loading runs no collective,
// so the communicator needs no threads behind it.
struct TwoWayShard {
  test_support::ThreadGroup group{2};
  test_support::ThreadCommunicator comm;
  TensorShard shard;
  explicit TwoWayShard(int rank) : comm(group, rank), shard{rank, 2, &comm} {}
};

std::vector<float> host(Backend& backend, const Buffer& buffer) {
  std::vector<float> out(buffer.size());
  if (!out.empty()) backend.download(buffer.data(), out);
  return out;
}

std::vector<float> concat(const TinyCheckpoint& ck, const std::vector<std::string>& names) {
  std::vector<float> out;
  for (const std::string& n : names) {
    const std::vector<float>& v = ck.values.at(n);
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

// Every tensor of the checkpoint is where the header's layout says.
void expect_loaded(const TinyCheckpoint& ck, const ModelConfig& c, const LlamaWeights& w,
                   Backend& backend) {
  EXPECT_EQ(host(backend, w.embed), ck.values.at("model.embed_tokens.weight"));
  ASSERT_EQ(w.layers.size(), static_cast<size_t>(c.num_layers));
  for (int l = 0; l < c.num_layers; ++l) {
    SCOPED_TRACE("layer " + std::to_string(l));
    std::string p = "model.layers." + std::to_string(l) + ".";
    std::string a = p + "self_attn.";
    const LlamaLayerWeights& lw = w.layers[static_cast<size_t>(l)];
    EXPECT_EQ(host(backend, lw.attn_norm), ck.values.at(p + "input_layernorm.weight"));
    EXPECT_EQ(host(backend, lw.qkv),
              concat(ck, {a + "q_proj.weight", a + "k_proj.weight", a + "v_proj.weight"}));
    if (c.attention_bias) {
      EXPECT_EQ(host(backend, lw.qkv_bias),
                concat(ck, {a + "q_proj.bias", a + "k_proj.bias", a + "v_proj.bias"}));
    } else {
      EXPECT_TRUE(lw.qkv_bias.empty());
    }
    if (c.qk_norm) {
      EXPECT_EQ(host(backend, lw.q_norm), ck.values.at(a + "q_norm.weight"));
      EXPECT_EQ(host(backend, lw.k_norm), ck.values.at(a + "k_norm.weight"));
    } else {
      EXPECT_TRUE(lw.q_norm.empty());
      EXPECT_TRUE(lw.k_norm.empty());
    }
    EXPECT_EQ(host(backend, lw.o_proj), ck.values.at(a + "o_proj.weight"));
    EXPECT_EQ(host(backend, lw.mlp_norm), ck.values.at(p + "post_attention_layernorm.weight"));
    EXPECT_EQ(host(backend, lw.gate_up),
              concat(ck, {p + "mlp.gate_proj.weight", p + "mlp.up_proj.weight"}));
    EXPECT_EQ(host(backend, lw.down_proj), ck.values.at(p + "mlp.down_proj.weight"));
  }
  EXPECT_EQ(host(backend, w.final_norm), ck.values.at("model.norm.weight"));
}

TEST(LlamaWeights, LoadsAndFusesUntiedCheckpoint) {
  auto backend = make_cpu_backend();
  ModelConfig c = tiny_config();
  TinyCheckpoint ck = make_checkpoint(c, /*with_lm_head=*/true);
  TempDir dir;
  write_safetensors(dir / "model.safetensors", ck.tensors(ck.names()));
  LlamaWeights w = load_llama_weights(dir.path(), c, *backend);
  expect_loaded(ck, c, w, *backend);
  EXPECT_EQ(host(*backend, w.lm_head), ck.values.at("lm_head.weight"));
  EXPECT_EQ(w.lm_head_or_embed().data, w.lm_head.view().data);

  // Spot checks of the fused layout by row: qkv row q_dim is k_proj row 0,
  // row q_dim + kv_dim is v_proj row 0; gate_up row I is up_proj row 0.
  std::vector<float> qkv = host(*backend, w.layers[1].qkv);
  const size_t C = 8;
  EXPECT_EQ(qkv[8 * C + 3], ck.values.at("model.layers.1.self_attn.k_proj.weight")[3]);
  EXPECT_EQ(qkv[12 * C + 5], ck.values.at("model.layers.1.self_attn.v_proj.weight")[5]);
  std::vector<float> gate_up = host(*backend, w.layers[0].gate_up);
  EXPECT_EQ(gate_up[12 * C + 7], ck.values.at("model.layers.0.mlp.up_proj.weight")[7]);
  EXPECT_EQ(gate_up[11 * C + 7], ck.values.at("model.layers.0.mlp.gate_proj.weight")[11 * C + 7]);

  // Bytes per step: everything but the embedding, in f32.
  int64_t params = c.parameter_count() - int64_t{16} * 8;
  EXPECT_EQ(w.bytes_read_per_step(), params * 4);
}

TEST(LlamaWeights, TiedEmbeddingsNeedNoLmHead) {
  auto backend = make_cpu_backend();
  ModelConfig c = tiny_config("LlamaForCausalLM", /*tie=*/true);
  TinyCheckpoint ck = make_checkpoint(c, /*with_lm_head=*/false);
  TempDir dir;
  write_safetensors(dir / "model.safetensors", ck.tensors(ck.names()));
  LlamaWeights w = load_llama_weights(dir.path(), c, *backend);
  expect_loaded(ck, c, w, *backend);
  EXPECT_TRUE(w.lm_head.empty());
  EXPECT_EQ(w.lm_head_or_embed().data, w.embed.view().data);
  // The tied head is still read once per step.
  EXPECT_EQ(w.bytes_read_per_step(), c.parameter_count() * 4);
}

TEST(LlamaWeights, UntiedConfigWithoutLmHeadIsAnError) {
  auto backend = make_cpu_backend();
  ModelConfig c = tiny_config();
  TinyCheckpoint ck = make_checkpoint(c, /*with_lm_head=*/false);
  TempDir dir;
  write_safetensors(dir / "model.safetensors", ck.tensors(ck.names()));
  try {
    load_llama_weights(dir.path(), c, *backend);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::not_found);
    EXPECT_THAT(e.what(), HasSubstr("lm_head.weight"));
    EXPECT_THAT(e.what(), HasSubstr("tie_word_embeddings"));
  }
}

TEST(LlamaWeights, Qwen2LoadsFusedBiases) {
  auto backend = make_cpu_backend();
  ModelConfig c = tiny_config("Qwen2ForCausalLM", /*tie=*/true);
  ASSERT_TRUE(c.attention_bias);
  TinyCheckpoint ck = make_checkpoint(c, /*with_lm_head=*/false);
  TempDir dir;
  write_safetensors(dir / "model.safetensors", ck.tensors(ck.names()));
  LlamaWeights w = load_llama_weights(dir.path(), c, *backend);
  expect_loaded(ck, c, w, *backend);
  EXPECT_EQ(w.layers[0].qkv_bias.size(), 16u);

  // Without the biases the load names the first one missing.
  std::vector<std::string> names;
  for (const std::string& n : ck.names()) {
    if (n.find(".bias") == std::string::npos) names.push_back(n);
  }
  write_safetensors(dir / "model.safetensors", ck.tensors(names));
  try {
    load_llama_weights(dir.path(), c, *backend);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::not_found);
    EXPECT_THAT(e.what(), HasSubstr("model.layers.0.self_attn.q_proj.bias"));
  }
}

TEST(LlamaWeights, Qwen3LoadsQkNormsReplicatedOnEveryShard) {
  auto backend = make_cpu_backend();
  ModelConfig c = tiny_config("Qwen3ForCausalLM", /*tie=*/true);
  ASSERT_TRUE(c.qk_norm);
  ASSERT_FALSE(c.attention_bias);
  TinyCheckpoint ck = make_checkpoint(c, /*with_lm_head=*/false);
  TempDir dir;
  write_safetensors(dir / "model.safetensors", ck.tensors(ck.names()));
  LlamaWeights w = load_llama_weights(dir.path(), c, *backend);
  expect_loaded(ck, c, w, *backend);
  EXPECT_EQ(w.layers[1].q_norm.size(), 4u);  // D, not q_dim
  EXPECT_EQ(w.bytes_read_per_step(), c.parameter_count() * 4);  // tied: embed is the LM head

  // Each of two shards holds one query head and all D norm weights.
  for (int rank = 0; rank < 2; ++rank) {
    TwoWayShard two(rank);
    LlamaWeights s = load_llama_weights(dir.path(), c, *backend, two.shard);
    EXPECT_EQ(s.layers[1].qkv.size(), 3u * 4 * 8);  // one head each of q, k (replicated), v
    const std::string a = "model.layers.1.self_attn.";
    EXPECT_EQ(host(*backend, s.layers[1].q_norm), ck.values.at(a + "q_norm.weight"));
    EXPECT_EQ(host(*backend, s.layers[1].k_norm), ck.values.at(a + "k_norm.weight"));
  }

  // Without k_norm the load names the file's missing tensor.
  std::vector<std::string> names;
  for (const std::string& n : ck.names()) {
    if (n != "model.layers.1.self_attn.k_norm.weight") names.push_back(n);
  }
  write_safetensors(dir / "model.safetensors", ck.tensors(names));
  try {
    load_llama_weights(dir.path(), c, *backend);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::not_found);
    EXPECT_THAT(e.what(), HasSubstr("model.layers.1.self_attn.k_norm.weight"));
    EXPECT_THAT(e.what(), HasSubstr("model.safetensors"));  // the file searched
  }
}

TEST(LlamaWeights, ShardedCheckpointLoadsTheSame) {
  auto backend = make_cpu_backend();
  ModelConfig c = tiny_config();
  TinyCheckpoint ck = make_checkpoint(c, /*with_lm_head=*/true);
  std::vector<std::string> all = ck.names(), first, second;
  for (size_t i = 0; i < all.size(); ++i) (i % 2 == 0 ? first : second).push_back(all[i]);
  TempDir dir;
  write_safetensors(dir / "model-00001-of-00002.safetensors", ck.tensors(first));
  write_safetensors(dir / "model-00002-of-00002.safetensors", ck.tensors(second));
  write_index(dir.path(), {{"model-00001-of-00002.safetensors", first},
                           {"model-00002-of-00002.safetensors", second}});
  LlamaWeights w = load_llama_weights(dir.path(), c, *backend);
  expect_loaded(ck, c, w, *backend);
  EXPECT_EQ(host(*backend, w.lm_head), ck.values.at("lm_head.weight"));
}

TEST(LlamaWeights, WrongShapeNamesFileAndTensor) {
  auto backend = make_cpu_backend();
  ModelConfig c = tiny_config();
  TinyCheckpoint ck = make_checkpoint(c, /*with_lm_head=*/true);
  TempDir dir;
  write_safetensors(dir / "model.safetensors", ck.tensors(ck.names()));
  c.intermediate_size = 10;  // the config disagrees with the weights
  try {
    load_llama_weights(dir.path(), c, *backend);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
    EXPECT_THAT(e.what(), HasSubstr("model.safetensors"));
    EXPECT_THAT(e.what(), HasSubstr("'model.layers.0.mlp.gate_proj.weight'"));
    EXPECT_THAT(e.what(), HasSubstr("[12, 8]"));
    EXPECT_THAT(e.what(), HasSubstr("[10, 8]"));
  }
}

TEST(LlamaWeights, MissingCheckpointIsNotFound) {
  auto backend = make_cpu_backend();
  TempDir dir;
  EXPECT_THROW(load_llama_weights(dir.path(), tiny_config(), *backend), Error);
}

// ---- dummy weights -------------------------------------------------------------

TEST(DummyWeights, ShapesNormsAndBiases) {
  auto backend = make_cpu_backend();
  ModelConfig c = tiny_config("Qwen2ForCausalLM", /*tie=*/false);
  LlamaWeights w = make_dummy_weights(c, 1, *backend);
  EXPECT_EQ(w.embed.size(), 16u * 8);
  EXPECT_EQ(w.lm_head.size(), 16u * 8);
  EXPECT_EQ(w.final_norm.size(), 8u);
  ASSERT_EQ(w.layers.size(), 2u);
  for (const LlamaLayerWeights& l : w.layers) {
    EXPECT_EQ(l.qkv.size(), 16u * 8);
    EXPECT_EQ(l.qkv_bias.size(), 16u);
    EXPECT_EQ(l.o_proj.size(), 8u * 8);
    EXPECT_EQ(l.gate_up.size(), 24u * 8);
    EXPECT_EQ(l.down_proj.size(), 8u * 12);
    EXPECT_EQ(host(*backend, l.attn_norm), std::vector<float>(8, 1.0f));
    EXPECT_EQ(host(*backend, l.mlp_norm), std::vector<float>(8, 1.0f));
    EXPECT_EQ(host(*backend, l.qkv_bias), std::vector<float>(16, 0.0f));
  }
  EXPECT_EQ(host(*backend, w.final_norm), std::vector<float>(8, 1.0f));
  EXPECT_EQ(w.bytes_read_per_step(), (c.parameter_count() - 16 * 8) * 4);

  ModelConfig tied = tiny_config("LlamaForCausalLM", /*tie=*/true);
  LlamaWeights t = make_dummy_weights(tied, 1, *backend);
  EXPECT_TRUE(t.lm_head.empty());
  EXPECT_TRUE(t.layers[0].qkv_bias.empty());
  EXPECT_TRUE(t.layers[0].q_norm.empty());

  // Qwen3: q_norm and k_norm of D ones in every layer, on every shard.
  ModelConfig qwen3 = tiny_config("Qwen3ForCausalLM", /*tie=*/false);
  for (int rank = 0; rank < 2; ++rank) {
    TwoWayShard two(rank);
    LlamaWeights q = make_dummy_weights(qwen3, 1, *backend, two.shard);
    for (const LlamaLayerWeights& l : q.layers) {
      EXPECT_EQ(host(*backend, l.q_norm), std::vector<float>(4, 1.0f));
      EXPECT_EQ(host(*backend, l.k_norm), std::vector<float>(4, 1.0f));
    }
  }
  EXPECT_EQ(make_dummy_weights(qwen3, 1, *backend).bytes_read_per_step(),
            (qwen3.parameter_count() - 16 * 8) * 4);
}

TEST(DummyWeights, DeterministicInSeed) {
  auto backend = make_cpu_backend();
  ModelConfig c = tiny_config();
  LlamaWeights a = make_dummy_weights(c, 42, *backend);
  LlamaWeights b = make_dummy_weights(c, 42, *backend);
  LlamaWeights d = make_dummy_weights(c, 43, *backend);
  EXPECT_EQ(host(*backend, a.embed), host(*backend, b.embed));
  EXPECT_EQ(host(*backend, a.layers[1].gate_up), host(*backend, b.layers[1].gate_up));
  EXPECT_EQ(host(*backend, a.lm_head), host(*backend, b.lm_head));
  EXPECT_NE(host(*backend, a.embed), host(*backend, d.embed));
  // Different tensors of one model are different streams.
  EXPECT_NE(host(*backend, a.embed), host(*backend, a.lm_head));

  // Odd element counts (C 9, V 17): the last element is filled too.
  nlohmann::json j = {{"architectures", {"LlamaForCausalLM"}}, {"hidden_size", 9},
                      {"intermediate_size", 5}, {"num_hidden_layers", 1},
                      {"num_attention_heads", 2}, {"head_dim", 4}, {"vocab_size", 17},
                      {"max_position_embeddings", 64}};
  LlamaWeights odd = make_dummy_weights(parse_model_config(j.dump(), "odd"), 42, *backend);
  for (const Buffer* buffer : {&odd.embed, &odd.lm_head, &odd.layers[0].down_proj}) {
    std::vector<float> v = host(*backend, *buffer);
    ASSERT_EQ(v.size() % 2, 1u);
    for (float x : v) {
      EXPECT_TRUE(std::isfinite(x));
      EXPECT_NE(x, 0.0f);
      EXPECT_LT(std::fabs(x), 0.2f);  // ten sigma
    }
  }
}

// A ~24M-parameter model (the size of the tiny trained target): the
// distribution on a big sample. Its build time is printed, not asserted: a
// shared test machine makes any limit either flaky or meaningless.
TEST(DummyWeights, NormalWithStd002OnABigSample) {
  nlohmann::json j = {{"architectures", {"LlamaForCausalLM"}}, {"hidden_size", 512},
                      {"intermediate_size", 1536}, {"num_hidden_layers", 8},
                      {"num_attention_heads", 8}, {"vocab_size", 8192},
                      {"max_position_embeddings", 1024}};
  ModelConfig c = parse_model_config(j.dump(), "bench/config.json");
  auto backend = make_cpu_backend();
  auto start = std::chrono::steady_clock::now();
  LlamaWeights w = make_dummy_weights(c, 5, *backend);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  RecordProperty("dummy_seconds", std::to_string(seconds));
  std::printf("dummy weights: %.1fM params in %.3f s\n", c.parameter_count() / 1e6, seconds);

  std::vector<float> v = host(*backend, w.embed);
  double sum = 0, sum_sq = 0;
  int beyond_3_sigma = 0;
  for (float x : v) {
    sum += x;
    sum_sq += static_cast<double>(x) * x;
    if (std::fabs(x) > 0.06f) ++beyond_3_sigma;
  }
  const double n = static_cast<double>(v.size());
  EXPECT_NEAR(sum / n, 0.0, 1e-4);
  EXPECT_NEAR(std::sqrt(sum_sq / n), 0.02, 2e-4);
  EXPECT_NEAR(beyond_3_sigma / n, 0.0027, 0.0005);  // a normal tail, not a uniform one
}

}  // namespace
}  // namespace tandem
