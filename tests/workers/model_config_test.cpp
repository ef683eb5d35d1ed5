// ModelConfig: parsing real Hugging Face config.json files, the errors for
// bad or unsupported ones, and RoPE inverse frequencies (llama3 scaling
// checked against an independent NumPy computation).
#include "workers/model_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "safetensors_writer.h"

namespace tandem {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;

// Meta-Llama-3.1-8B's config.json (the keys Tandem reads, verbatim values).
json llama31_8b() {
  return json::parse(R"({
    "architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
    "bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009], "hidden_act": "silu",
    "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 14336,
    "max_position_embeddings": 131072, "mlp_bias": false, "model_type": "llama",
    "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
    "pretraining_tp": 1, "rms_norm_eps": 1e-05,
    "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                     "original_max_position_embeddings": 8192, "rope_type": "llama3"},
    "rope_theta": 500000.0, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
    "vocab_size": 128256})");
}

// Qwen2.5-0.5B's config.json.
json qwen25_05b() {
  return json::parse(R"({
    "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643,
    "eos_token_id": 151643, "hidden_act": "silu", "hidden_size": 896,
    "initializer_range": 0.02, "intermediate_size": 4864, "max_position_embeddings": 32768,
    "max_window_layers": 24, "model_type": "qwen2", "num_attention_heads": 14,
    "num_hidden_layers": 24, "num_key_value_heads": 2, "rms_norm_eps": 1e-06,
    "rope_theta": 1000000.0, "sliding_window": 32768, "tie_word_embeddings": true,
    "torch_dtype": "bfloat16", "use_cache": true, "use_sliding_window": false,
    "vocab_size": 151936})");
}

// Qwen3-8B's config.json.
json qwen3_8b() {
  return json::parse(R"({
    "architectures": ["Qwen3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
    "bos_token_id": 151643, "eos_token_id": 151645, "head_dim": 128, "hidden_act": "silu",
    "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 12288,
    "max_position_embeddings": 40960, "max_window_layers": 36, "model_type": "qwen3",
    "num_attention_heads": 32, "num_hidden_layers": 36, "num_key_value_heads": 8,
    "rms_norm_eps": 1e-06, "rope_scaling": null, "rope_theta": 1000000,
    "sliding_window": null, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
    "use_cache": true, "use_sliding_window": false, "vocab_size": 151936})");
}

// Mistral-7B-v0.3's config.json.
json mistral_7b_v03() {
  return json::parse(R"({
    "architectures": ["MistralForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 1,
    "eos_token_id": 2, "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02,
    "intermediate_size": 14336, "max_position_embeddings": 32768, "model_type": "mistral",
    "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
    "rms_norm_eps": 1e-05, "rope_theta": 1000000.0, "sliding_window": null,
    "tie_word_embeddings": false, "torch_dtype": "bfloat16", "vocab_size": 32768})");
}

ModelConfig parse(const json& j) { return parse_model_config(j.dump(), "test/config.json"); }

// The Error parse raises; fails the test when none is raised.
Error parse_text_error(const std::string& text) {
  try {
    parse_model_config(text, "test/config.json");
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "no Error for: " << text;
  return Error(ErrorKind::internal, "");
}
Error parse_error(const json& j) { return parse_text_error(j.dump()); }

TEST(ModelConfig, ParsesLlama31WithGqaAndLlama3Rope) {
  ModelConfig c = parse(llama31_8b());
  EXPECT_EQ(c.architecture, "LlamaForCausalLM");
  EXPECT_EQ(c.hidden_size, 4096);
  EXPECT_EQ(c.intermediate_size, 14336);
  EXPECT_EQ(c.num_layers, 32);
  EXPECT_EQ(c.num_heads, 32);
  EXPECT_EQ(c.num_kv_heads, 8);
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_EQ(c.q_dim(), 4096);
  EXPECT_EQ(c.kv_dim(), 1024);
  EXPECT_EQ(c.vocab_size, 128256);
  EXPECT_EQ(c.max_position_embeddings, 131072);
  EXPECT_DOUBLE_EQ(c.rms_norm_eps, 1e-5);
  EXPECT_DOUBLE_EQ(c.rope_theta, 500000.0);
  EXPECT_EQ(c.rope_scaling.type, RopeScaling::Type::llama3);
  EXPECT_DOUBLE_EQ(c.rope_scaling.factor, 8.0);
  EXPECT_DOUBLE_EQ(c.rope_scaling.low_freq_factor, 1.0);
  EXPECT_DOUBLE_EQ(c.rope_scaling.high_freq_factor, 4.0);
  EXPECT_EQ(c.rope_scaling.original_max_position_embeddings, 8192);
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_FALSE(c.attention_bias);
  EXPECT_EQ(c.bos_token_id, 128000);
  EXPECT_EQ(c.eos_token_ids, (std::vector<int>{128001, 128008, 128009}));
  // The published size of Llama 3.1 8B.
  EXPECT_EQ(c.parameter_count(), 8030261248);
}

TEST(ModelConfig, ParsesQwen2WithBiasesAndTiedEmbeddings) {
  ModelConfig c = parse(qwen25_05b());
  EXPECT_EQ(c.architecture, "Qwen2ForCausalLM");
  EXPECT_TRUE(c.attention_bias);  // Qwen2 always biases q/k/v
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(c.num_heads, 14);
  EXPECT_EQ(c.num_kv_heads, 2);
  EXPECT_EQ(c.head_dim, 64);
  EXPECT_EQ(c.rope_scaling.type, RopeScaling::Type::none);
  EXPECT_EQ(c.eos_token_ids, std::vector<int>{151643});
  // The published size of Qwen2.5-0.5B (embedding counted once, biases in).
  EXPECT_EQ(c.parameter_count(), 494032768);
}

TEST(ModelConfig, ParsesQwen3WithQkNormAndExplicitHeadDim) {
  ModelConfig c = parse(qwen3_8b());
  EXPECT_EQ(c.architecture, "Qwen3ForCausalLM");
  EXPECT_TRUE(c.qk_norm);  // Qwen3 always normalizes queries and keys per head
  EXPECT_FALSE(c.attention_bias);
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_EQ(c.num_kv_heads, 8);
  EXPECT_DOUBLE_EQ(c.rope_theta, 1e6);
  EXPECT_EQ(c.rope_scaling.type, RopeScaling::Type::none);
  EXPECT_EQ(c.max_position_embeddings, 40960);
  EXPECT_EQ(c.eos_token_ids, std::vector<int>{151645});
  // Qwen3-8B's size, q_norm and k_norm included: the model card's 8.2B
  // parameters, 6.95B of them outside the embedding and LM head.
  EXPECT_EQ(c.parameter_count(), 8190735360);
  // Other architectures have no q/k norm.
  EXPECT_FALSE(parse(qwen25_05b()).qk_norm);
  EXPECT_FALSE(parse(llama31_8b()).qk_norm);

  // Qwen3-0.6B: head_dim 128 with hidden_size 1024 and 16 heads (not
  // hidden / heads), tied embeddings.
  json small = qwen3_8b();
  small["hidden_size"] = 1024;
  small["intermediate_size"] = 3072;
  small["num_hidden_layers"] = 28;
  small["num_attention_heads"] = 16;
  small["tie_word_embeddings"] = true;
  c = parse(small);
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_EQ(c.q_dim(), 2048);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(c.parameter_count(), 596049920);  // the model card's 0.6B (0.44B non-embedding)
}

TEST(ModelConfig, Qwen3ShapesForDummyWeightsParse) {
  // configs/shapes/ holds the two published Qwen3 shapes the `dummy` load
  // format serves: the same sizes as the real config.json files.
  const std::filesystem::path shapes = std::filesystem::path(TANDEM_SOURCE_DIR) / "configs/shapes";
  auto read = [&](const char* name) {
    std::ifstream in(shapes / name);
    std::stringstream text;
    text << in.rdbuf();
    return parse_model_config(text.str(), name);
  };
  const ModelConfig target = read("qwen3-8b.json");
  EXPECT_TRUE(target.qk_norm);
  EXPECT_EQ(target.parameter_count(), parse(qwen3_8b()).parameter_count());
  const ModelConfig draft = read("qwen3-0.6b.json");
  EXPECT_TRUE(draft.qk_norm);
  EXPECT_TRUE(draft.tie_word_embeddings);
  EXPECT_EQ(draft.head_dim, 128);
  EXPECT_EQ(draft.vocab_size, target.vocab_size);  // a draft must share the vocabulary
  EXPECT_EQ(draft.parameter_count(), 596049920);
}

TEST(ModelConfig, Qwen3RefusesWhatItCannotRun) {
  // attention_bias true puts a bias on Qwen3's o_proj too.
  json j = qwen3_8b();
  j["attention_bias"] = true;
  Error e = parse_error(j);
  EXPECT_EQ(e.kind(), ErrorKind::unsupported);
  EXPECT_THAT(e.what(), HasSubstr("'attention_bias'"));
  // The window is ignored unless use_sliding_window; then it is refused.
  j = qwen3_8b();
  j["sliding_window"] = 4096;
  EXPECT_NO_THROW(parse(j));
  j["use_sliding_window"] = true;
  e = parse_error(j);
  EXPECT_EQ(e.kind(), ErrorKind::unsupported);
  EXPECT_THAT(e.what(), HasSubstr("'sliding_window'"));
  // Without a head_dim, hidden / heads is the default, as for the others.
  j = qwen3_8b();
  j.erase("head_dim");
  EXPECT_EQ(parse(j).head_dim, 128);
}

TEST(ModelConfig, ParsesMistralWithNullSlidingWindow) {
  ModelConfig c = parse(mistral_7b_v03());
  EXPECT_EQ(c.architecture, "MistralForCausalLM");
  EXPECT_FALSE(c.attention_bias);
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_EQ(c.bos_token_id, 1);
  EXPECT_EQ(c.eos_token_ids, std::vector<int>{2});
  EXPECT_DOUBLE_EQ(c.rope_theta, 1e6);
}

TEST(ModelConfig, DefaultsAndExplicitHeadDim) {
  json j = mistral_7b_v03();
  j.erase("num_key_value_heads");   // default: one KV head per query head
  j["head_dim"] = nullptr;          // null means "hidden / heads"
  j.erase("rms_norm_eps");
  j.erase("rope_theta");
  j.erase("tie_word_embeddings");
  j.erase("bos_token_id");
  j.erase("eos_token_id");
  ModelConfig c = parse(j);
  EXPECT_EQ(c.num_kv_heads, 32);
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_DOUBLE_EQ(c.rms_norm_eps, 1e-6);
  EXPECT_DOUBLE_EQ(c.rope_theta, 10000.0);
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_EQ(c.bos_token_id, -1);
  EXPECT_TRUE(c.eos_token_ids.empty());

  // Mistral-Nemo style: head_dim given and not hidden / heads.
  j["hidden_size"] = 5120;
  j["head_dim"] = 128;
  c = parse(j);
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_EQ(c.q_dim(), 4096);
}

TEST(ModelConfig, RopeParametersOfTransformers5AndDefaultType) {
  json j = llama31_8b();
  json rope = j["rope_scaling"];
  rope["rope_theta"] = 500000.0;
  j.erase("rope_scaling");
  j.erase("rope_theta");
  j["rope_parameters"] = rope;
  ModelConfig c = parse(j);
  EXPECT_DOUBLE_EQ(c.rope_theta, 500000.0);
  EXPECT_EQ(c.rope_scaling.type, RopeScaling::Type::llama3);
  EXPECT_EQ(rope_inv_freq(c), rope_inv_freq(parse(llama31_8b())));

  j["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 1e4}};
  c = parse(j);
  EXPECT_EQ(c.rope_scaling.type, RopeScaling::Type::none);
  EXPECT_DOUBLE_EQ(c.rope_theta, 1e4);
}

TEST(ModelConfig, SlidingWindowSmallerThanContextIsUnsupported) {
  json j = mistral_7b_v03();
  j.erase("sliding_window");  // MistralConfig's default is a 4096 window
  EXPECT_EQ(parse_error(j).kind(), ErrorKind::unsupported);
  j["sliding_window"] = 4096;  // Mistral-7B-v0.1
  Error e = parse_error(j);
  EXPECT_EQ(e.kind(), ErrorKind::unsupported);
  EXPECT_THAT(e.what(), HasSubstr("sliding_window"));
  EXPECT_THAT(e.what(), HasSubstr("test/config.json"));
  // A window covering every position changes nothing and is accepted.
  j["sliding_window"] = 32768;
  EXPECT_NO_THROW(parse(j));
  // Qwen2 ignores the window unless use_sliding_window is set.
  json q = qwen25_05b();
  q["sliding_window"] = 4096;
  EXPECT_NO_THROW(parse(q));
  q["use_sliding_window"] = true;
  EXPECT_EQ(parse_error(q).kind(), ErrorKind::unsupported);
}

TEST(ModelConfig, ErrorsNameTheKey) {
  struct Case {
    const char* key;
    json value;  // null: erase the key
    const char* expected_in_message;
    ErrorKind kind;
  };
  const Case cases[] = {
      {"hidden_size", nullptr, "'hidden_size'", ErrorKind::invalid_argument},
      {"hidden_size", -4096, "'hidden_size'", ErrorKind::invalid_argument},
      {"hidden_size", "4096", "'hidden_size'", ErrorKind::invalid_argument},
      {"intermediate_size", 0, "'intermediate_size'", ErrorKind::invalid_argument},
      {"num_hidden_layers", 1.5, "'num_hidden_layers'", ErrorKind::invalid_argument},
      {"vocab_size", nullptr, "'vocab_size'", ErrorKind::invalid_argument},
      {"num_key_value_heads", 5, "'num_key_value_heads'", ErrorKind::invalid_argument},
      {"head_dim", 127, "'head_dim'", ErrorKind::invalid_argument},
      {"rms_norm_eps", -1.0, "'rms_norm_eps'", ErrorKind::invalid_argument},
      {"tie_word_embeddings", "yes", "'tie_word_embeddings'", ErrorKind::invalid_argument},
      {"eos_token_id", 999999999, "'eos_token_id'", ErrorKind::invalid_argument},
      {"architectures", json::array({"GPT2LMHeadModel"}), "'architectures'",
       ErrorKind::unsupported},
      {"architectures", nullptr, "'architectures'", ErrorKind::invalid_argument},
      {"hidden_act", "gelu", "'hidden_act'", ErrorKind::unsupported},
      {"mlp_bias", true, "'mlp_bias'", ErrorKind::unsupported},
      {"attention_bias", true, "'attention_bias'", ErrorKind::unsupported},
      {"rope_scaling", json{{"rope_type", "yarn"}, {"factor", 4.0}}, "'rope_scaling.rope_type'",
       ErrorKind::unsupported},
      {"rope_scaling", json{{"type", "linear"}, {"factor", 2.0}}, "'rope_scaling.type'",
       ErrorKind::unsupported},
      {"rope_scaling", json{{"rope_type", "llama3"}, {"low_freq_factor", 1.0}},
       "'rope_scaling.factor'", ErrorKind::invalid_argument},
      {"rope_scaling",
       json{{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0},
            {"high_freq_factor", 4.0}},
       "'rope_scaling.original_max_position_embeddings'", ErrorKind::invalid_argument},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.key) + " = " + c.value.dump());
    json j = llama31_8b();
    if (c.value.is_null()) {
      j.erase(c.key);
    } else {
      j[c.key] = c.value;
    }
    Error e = parse_error(j);
    EXPECT_EQ(e.kind(), c.kind);
    EXPECT_THAT(e.what(), HasSubstr(c.expected_in_message));
    EXPECT_THAT(e.what(), HasSubstr("test/config.json"));
    EXPECT_THAT(e.what(), HasSubstr("Hint:"));
  }
}

TEST(ModelConfig, MalformedJsonIsCorruptData) {
  EXPECT_EQ(parse_text_error("{\"hidden_size\": 4096,").kind(), ErrorKind::corrupt_data);
  EXPECT_EQ(parse_text_error("[1, 2]").kind(), ErrorKind::corrupt_data);
  EXPECT_THAT(parse_text_error("").what(), HasSubstr("test/config.json"));
}

TEST(ModelConfig, LoadsFromDirectoryAndNamesMissingFile) {
  testing_util::TempDir dir;
  try {
    load_model_config(dir.path());
    ADD_FAILURE() << "no error for a directory without config.json";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::not_found);
    EXPECT_THAT(e.what(), HasSubstr("config.json"));
  }
  testing_util::write_file(dir / "config.json", qwen25_05b().dump());
  EXPECT_EQ(load_model_config(dir.path()).hidden_size, 896);
}

TEST(RopeInvFreq, UnscaledMatchesDefinition) {
  ModelConfig c = parse(mistral_7b_v03());
  std::vector<float> inv = rope_inv_freq(c);
  ASSERT_EQ(inv.size(), 64u);
  EXPECT_EQ(inv[0], 1.0f);
  for (int i = 0; i < 64; ++i) {
    double expected = 1.0 / std::pow(1e6, (2.0 * i) / 128.0);
    EXPECT_NEAR(inv[static_cast<size_t>(i)], expected, 1e-7 * expected) << "i = " << i;
  }
}

TEST(RopeInvFreq, Llama3ScalingBands) {
  ModelConfig c = parse(llama31_8b());
  std::vector<float> inv = rope_inv_freq(c);
  ASSERT_EQ(inv.size(), 64u);
  const double pi = 3.14159265358979323846;
  int high = 0, medium = 0, low = 0;
  for (int i = 0; i < 64; ++i) {
    double base = std::pow(500000.0, -2.0 * i / 128.0);
    double wavelen = 2 * pi / base;
    double expected;
    if (wavelen < 8192.0 / 4.0) {  // high frequencies: unchanged
      expected = base;
      ++high;
    } else if (wavelen > 8192.0 / 1.0) {  // low frequencies: divided by factor
      expected = base / 8.0;
      ++low;
    } else {  // between: linear in 8192 / wavelen from base/8 to base
      double smooth = (8192.0 / wavelen - 1.0) / (4.0 - 1.0);
      expected = (1 - smooth) * base / 8.0 + smooth * base;
      ++medium;
    }
    EXPECT_NEAR(inv[static_cast<size_t>(i)], expected, 1e-7 * expected) << "i = " << i;
  }
  // The config really exercises all three bands.
  EXPECT_GT(high, 0);
  EXPECT_GT(medium, 0);
  EXPECT_GT(low, 0);
}

// Hugging Face's _compute_llama3_parameters, transcribed to NumPy.
const char* const kNumpyLlama3 = R"PY(
import numpy as np
base, dim = 500000.0, 128
factor, low, high, old = 8.0, 1.0, 4.0, 8192
inv_freq = 1.0 / (base ** (np.arange(0, dim, 2, dtype=np.float64) / dim))
low_wl, high_wl = old / low, old / high
wavelen = 2 * np.pi / inv_freq
out = np.where(wavelen > low_wl, inv_freq / factor, inv_freq)
smooth = (old / wavelen - low) / (high - low)
smoothed = (1 - smooth) * out / factor + smooth * out
medium = ~(wavelen < high_wl) & ~(wavelen > low_wl)
out = np.where(medium, smoothed, out)
print(" ".join(repr(float(x)) for x in out))
)PY";

TEST(RopeInvFreq, Llama3MatchesNumpyReference) {
  testing_util::TempDir dir;
  testing_util::write_file(dir / "llama3.py", kNumpyLlama3);
  std::string command =
      std::string(TANDEM_PYTHON) + " " + (dir / "llama3.py").string() + " 2>/dev/null";
  FILE* pipe = ::popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::vector<double> expected;
  double value;
  while (std::fscanf(pipe, "%lf", &value) == 1) expected.push_back(value);
  int status = ::pclose(pipe);
  if (status != 0 || expected.empty()) GTEST_SKIP() << "skipped: no python3 with numpy";
  std::vector<float> inv = rope_inv_freq(parse(llama31_8b()));
  ASSERT_EQ(inv.size(), expected.size());
  for (size_t i = 0; i < inv.size(); ++i) {
    EXPECT_NEAR(inv[i], expected[i], 1e-7 * expected[i]) << "i = " << i;
  }
}

}  // namespace
}  // namespace tandem
