// Reading a Hugging Face config.json into a ModelConfig.
//
// Dimension glossary (as in kernels/backend.h): C hidden size, I MLP
// intermediate size, H query heads, K key/value heads, D head dimension,
// V vocabulary size.
//
// The parser is strict on purpose: a value Tandem would silently misuse (a
// sliding window, an unknown RoPE scaling, an MLP bias) is an `unsupported`
// Error naming the key, never a default. Keys Hugging Face itself defaults
// get the same defaults here, taken from the architecture's config class.
#include "workers/model_config.h"

#include <cmath>
#include <fstream>
#include <limits>
#include <optional>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/error.h"

namespace tandem {
namespace {

using nlohmann::json;

enum class Architecture { llama, mistral, qwen2, qwen3, mixtral, qwen3_moe };

// Every message starts with the file and the key, and ends with what to do.
[[noreturn]] void fail(ErrorKind kind, const std::string& source, const std::string& key,
                       const std::string& what, const std::string& hint) {
  throw Error(kind, source + ": key '" + key + "': " + what + ". Hint: " + hint);
}

const char* const kCheckHint = "check that config.json comes from the same checkpoint";

// A key is "absent" when missing or null: Hugging Face writes null for
// "use the default" (e.g. head_dim, sliding_window, bos_token_id).
const json* find_key(const json& object, const std::string& key) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return nullptr;
  return &*it;
}

int64_t read_integer(const json& value, const std::string& source, const std::string& key) {
  // Accept 4096 and 4096.0 alike (some exporters write floats), not 40.5.
  if (value.is_number_integer()) return value.get<int64_t>();
  if (value.is_number_float()) {
    double d = value.get<double>();
    if (std::isfinite(d) && std::floor(d) == d && std::fabs(d) < 9.0e15) {
      return static_cast<int64_t>(d);
    }
  }
  fail(ErrorKind::invalid_argument, source, key, "must be an integer, got " + value.dump(),
       kCheckHint);
}

// Positive int that fits an int (sizes are used as GEMM dimensions).
// `prefix` names the enclosing object in messages ("rope_scaling.").
int positive_int(const json& root, const std::string& source, const std::string& name,
                 std::optional<int> fallback, const std::string& prefix = "") {
  const std::string key = prefix + name;
  const json* value = find_key(root, name);
  if (value == nullptr) {
    if (fallback) return *fallback;
    fail(ErrorKind::invalid_argument, source, key, "is required but missing",
         "Hugging Face configs for this architecture always carry it; " + std::string(kCheckHint));
  }
  int64_t v = read_integer(*value, source, key);
  if (v <= 0 || v > std::numeric_limits<int>::max()) {
    fail(ErrorKind::invalid_argument, source, key,
         "must be a positive integer below 2^31, got " + value->dump(), kCheckHint);
  }
  return static_cast<int>(v);
}

double positive_double(const json& root, const std::string& source, const std::string& name,
                       double fallback, const std::string& prefix = "") {
  const std::string key = prefix + name;
  const json* value = find_key(root, name);
  if (value == nullptr) return fallback;
  if (!value->is_number() || !(value->get<double>() > 0.0) || !std::isfinite(value->get<double>())) {
    fail(ErrorKind::invalid_argument, source, key, "must be a positive number, got " + value->dump(),
         kCheckHint);
  }
  return value->get<double>();
}

bool read_bool(const json& root, const std::string& source, const std::string& key, bool fallback) {
  const json* value = find_key(root, key);
  if (value == nullptr) return fallback;
  if (!value->is_boolean()) {
    fail(ErrorKind::invalid_argument, source, key, "must be true or false, got " + value->dump(),
         kCheckHint);
  }
  return value->get<bool>();
}

Architecture read_architecture(const json& root, const std::string& source, std::string* name) {
  static const std::pair<const char*, Architecture> kSupported[] = {
      {"LlamaForCausalLM", Architecture::llama},
      {"MistralForCausalLM", Architecture::mistral},
      {"Qwen2ForCausalLM", Architecture::qwen2},
      {"Qwen3ForCausalLM", Architecture::qwen3},
      {"MixtralForCausalLM", Architecture::mixtral},
      {"Qwen3MoeForCausalLM", Architecture::qwen3_moe},
  };
  const char* const hint =
      "Tandem serves LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, "
      "Qwen3ForCausalLM, MixtralForCausalLM and Qwen3MoeForCausalLM checkpoints";
  const json* list = find_key(root, "architectures");
  if (list == nullptr || !list->is_array() || list->empty()) {
    fail(ErrorKind::invalid_argument, source, "architectures",
         "must be a non-empty list of architecture names", hint);
  }
  for (const json& entry : *list) {
    if (!entry.is_string()) continue;
    for (const auto& [supported, arch] : kSupported) {
      if (entry.get<std::string>() == supported) {
        *name = supported;
        return arch;
      }
    }
  }
  fail(ErrorKind::unsupported, source, "architectures", "none of " + list->dump() + " is supported",
       hint);
}

// rope_scaling (transformers 4.x) or rope_parameters (transformers 5, which
// also moves rope_theta inside it).
void read_rope(const json& root, const std::string& source, ModelConfig& config) {
  config.rope_theta = positive_double(root, source, "rope_theta", 10000.0);
  std::string key = "rope_scaling";
  const json* rope = find_key(root, key);
  if (rope == nullptr) {
    key = "rope_parameters";
    rope = find_key(root, key);
  }
  if (rope == nullptr) return;
  if (!rope->is_object()) {
    fail(ErrorKind::invalid_argument, source, key, "must be an object or null, got " + rope->dump(),
         kCheckHint);
  }
  if (key == "rope_parameters" && find_key(*rope, "rope_theta") != nullptr) {
    config.rope_theta = positive_double(*rope, source, "rope_theta", 10000.0, key + ".");
  }
  std::string type_key = find_key(*rope, "rope_type") != nullptr ? "rope_type" : "type";
  const json* type = find_key(*rope, type_key);
  std::string type_name = type != nullptr && type->is_string() ? type->get<std::string>() : "";
  if (type_name == "default") return;  // Hugging Face's name for "no scaling"
  if (type_name != "llama3") {
    fail(ErrorKind::unsupported, source, key + "." + type_key,
         "RoPE scaling " + (type != nullptr ? type->dump() : std::string("(missing)")) +
             " is not implemented",
         "Tandem implements rope_type \"llama3\" only; use a checkpoint without other scaling");
  }
  // The four llama3 keys have no Hugging Face defaults: all are required.
  auto number = [&](const char* name) {
    const json* value = find_key(*rope, name);
    if (value == nullptr || !value->is_number() || !(value->get<double>() > 0.0)) {
      fail(ErrorKind::invalid_argument, source, key + "." + name,
           "llama3 RoPE scaling needs a positive number, got " +
               (value != nullptr ? value->dump() : std::string("(missing)")),
           kCheckHint);
    }
    return value->get<double>();
  };
  RopeScaling& s = config.rope_scaling;
  s.type = RopeScaling::Type::llama3;
  s.factor = number("factor");
  s.low_freq_factor = number("low_freq_factor");
  s.high_freq_factor = number("high_freq_factor");
  s.original_max_position_embeddings =
      positive_int(*rope, source, "original_max_position_embeddings", std::nullopt, key + ".");
  // The smooth interpolation divides by (high - low).
  if (!(s.high_freq_factor > s.low_freq_factor)) {
    fail(ErrorKind::invalid_argument, source, key + ".high_freq_factor",
         "must be larger than low_freq_factor", kCheckHint);
  }
}

std::vector<int> read_token_ids(const json& root, const std::string& source, const std::string& key,
                                int vocab_size) {
  std::vector<int> ids;
  const json* value = find_key(root, key);
  if (value == nullptr) return ids;
  auto add = [&](const json& id) {
    int64_t v = read_integer(id, source, key);
    if (v < 0 || v >= vocab_size) {
      fail(ErrorKind::invalid_argument, source, key,
           "token id " + id.dump() + " is outside the vocabulary [0, " +
               std::to_string(vocab_size) + ")",
           kCheckHint);
    }
    ids.push_back(static_cast<int>(v));
  };
  if (value->is_array()) {
    for (const json& id : *value) add(id);
  } else {
    add(*value);
  }
  return ids;
}

// Features that change the math of a layer and that Tandem does not have.
void reject_unsupported(const json& root, const std::string& source, Architecture arch,
                        const ModelConfig& config) {
  if (const json* act = find_key(root, "hidden_act"); act != nullptr && *act != "silu") {
    fail(ErrorKind::unsupported, source, "hidden_act", "activation " + act->dump() +
         " is not implemented", "Tandem's MLP is SwiGLU with silu");
  }
  if (read_bool(root, source, "mlp_bias", false)) {
    fail(ErrorKind::unsupported, source, "mlp_bias", "MLP biases are not implemented",
         "use a checkpoint with mlp_bias false");
  }
  // Other families' features, refused by their keys whatever the
  // architecture claims: DeepSeek-style latent attention (MLA) and shared
  // experts (Qwen2-MoE, DeepSeek) change the layer's math.
  for (const char* key : {"kv_lora_rank", "q_lora_rank"}) {
    if (find_key(root, key) != nullptr) {
      fail(ErrorKind::unsupported, source, key,
           "multi-head latent attention (MLA) is not implemented",
           "Tandem's attention is grouped-query attention over q/k/v projections");
    }
  }
  for (const char* key : {"shared_expert_intermediate_size", "n_shared_experts"}) {
    const json* value = find_key(root, key);
    if (value != nullptr && !(value->is_number() && value->get<double>() == 0.0)) {
      fail(ErrorKind::unsupported, source, key, "shared experts are not implemented",
           "Tandem's MoE layers are routed experts only (Mixtral, Qwen3-MoE)");
    }
  }
  // Llama's (and Qwen3's) attention_bias also biases o_proj, for which the
  // weight layout has no slot; Qwen2 biases q/k/v only, which is what
  // LlamaLayerWeights holds.
  if (arch != Architecture::qwen2 && config.attention_bias) {
    fail(ErrorKind::unsupported, source, "attention_bias",
         "attention_bias true also puts a bias on o_proj, which Tandem does not implement",
         "only Qwen2ForCausalLM checkpoints may carry attention biases");
  }
  // Sliding-window attention (Mistral v0.1; Qwen2 and Qwen3 when
  // use_sliding_window) is harmless only when the window covers every
  // position the model supports. A missing key (not null) means
  // MistralConfig's default window of 4096. Qwen's max_window_layers only
  // says which layers slide, so it matters only when this check passes.
  const bool qwen = arch == Architecture::qwen2 || arch == Architecture::qwen3 ||
                    arch == Architecture::qwen3_moe;
  bool window_on = read_bool(root, source, "use_sliding_window", !qwen);
  std::optional<int> window;
  if (!root.contains("sliding_window")) {
    if (arch == Architecture::mistral) window = 4096;
  } else if (find_key(root, "sliding_window") != nullptr) {
    window = positive_int(root, source, "sliding_window", std::nullopt);
  }
  if (window_on && window) {
    int w = *window;
    if (w < config.max_position_embeddings) {
      fail(ErrorKind::unsupported, source, "sliding_window",
           "sliding-window attention (window " + std::to_string(w) + " < max_position_embeddings " +
               std::to_string(config.max_position_embeddings) + ") is not implemented",
           "use a checkpoint with sliding_window null, or one whose window covers "
           "max_position_embeddings");
    }
  }
}

// The experts of MixtralForCausalLM (num_local_experts, intermediate_size
// per expert, always renormalised top-k) and Qwen3MoeForCausalLM
// (num_experts, moe_intermediate_size, norm_topk_prob). Router losses
// (router_aux_loss_coef, output_router_logits, router_jitter_noise) are
// training-only and ignored.
void read_moe(const json& root, const std::string& source, Architecture arch, ModelConfig& c) {
  const bool mixtral = arch == Architecture::mixtral;
  const std::string experts_key = mixtral ? "num_local_experts" : "num_experts";
  // Hugging Face's defaults: MixtralConfig 8 experts top-2; Qwen3MoeConfig
  // 128 experts top-8, norm_topk_prob false.
  c.num_experts = positive_int(root, source, experts_key, mixtral ? 8 : 128);
  c.moe_top_k = positive_int(root, source, "num_experts_per_tok", mixtral ? 2 : 8);
  if (c.moe_top_k > c.num_experts) {
    fail(ErrorKind::invalid_argument, source, "num_experts_per_tok",
         std::to_string(c.moe_top_k) + " is more than " + experts_key + " " +
             std::to_string(c.num_experts),
         kCheckHint);
  }
  c.moe_norm_topk_prob = mixtral || read_bool(root, source, "norm_topk_prob", false);
  if (mixtral) return;
  // Qwen3-MoE may keep some layers dense: those in mlp_only_layers, and all
  // but every decoder_sparse_step-th. Tandem's layers are all alike.
  if (const json* step = find_key(root, "decoder_sparse_step");
      step != nullptr && read_integer(*step, source, "decoder_sparse_step") != 1) {
    fail(ErrorKind::unsupported, source, "decoder_sparse_step",
         "dense layers between sparse ones (step " + step->dump() + ") are not implemented",
         "Tandem runs Qwen3-MoE checkpoints whose every layer is sparse (decoder_sparse_step 1)");
  }
  if (const json* dense = find_key(root, "mlp_only_layers");
      dense != nullptr && !(dense->is_array() && dense->empty())) {
    fail(ErrorKind::unsupported, source, "mlp_only_layers",
         "dense layers " + dense->dump() + " among the sparse ones are not implemented",
         "Tandem runs Qwen3-MoE checkpoints whose every layer is sparse (mlp_only_layers [])");
  }
}

}  // namespace

const char* ModelConfig::intermediate_key() const {
  return architecture == "Qwen3MoeForCausalLM" ? "moe_intermediate_size" : "intermediate_size";
}

int64_t ModelConfig::parameter_count() const {
  const int64_t C = hidden_size, I = intermediate_size, V = vocab_size;
  const int64_t qkv_rows = q_dim() + 2 * static_cast<int64_t>(kv_dim());
  int64_t per_layer = 2 * C                        // attention and MLP norms
                      + qkv_rows * C               // q, k, v projections
                      + (attention_bias ? qkv_rows : 0)
                      + (qk_norm ? 2 * static_cast<int64_t>(head_dim) : 0)
                      + C * q_dim()                // o_proj
                      + (is_moe() ? num_experts * (C + 3 * C * I)  // router row, expert
                                  : 3 * C * I);    // gate, up, down
  return V * C + num_layers * per_layer + C + (tie_word_embeddings ? 0 : V * C);
}

int64_t ModelConfig::active_parameter_count() const {
  const int64_t unused_experts = is_moe() ? num_experts - moe_top_k : 0;
  const int64_t expert = 3 * int64_t{hidden_size} * intermediate_size;
  return parameter_count() - num_layers * unused_experts * expert;
}

ModelConfig parse_model_config(const std::string& json_text, const std::string& source_name) {
  json root = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded() || !root.is_object()) {
    throw Error(ErrorKind::corrupt_data, source_name +
                ": not a JSON object. Hint: config.json must be the Hugging Face model config");
  }
  const std::string& src = source_name;
  ModelConfig c;
  Architecture arch = read_architecture(root, src, &c.architecture);
  c.hidden_size = positive_int(root, src, "hidden_size", std::nullopt);
  // Qwen3-MoE's intermediate_size is that of the dense layers it refuses.
  c.intermediate_size = positive_int(
      root, src, arch == Architecture::qwen3_moe ? "moe_intermediate_size" : "intermediate_size",
      std::nullopt);
  c.num_layers = positive_int(root, src, "num_hidden_layers", std::nullopt);
  c.num_heads = positive_int(root, src, "num_attention_heads", std::nullopt);
  c.num_kv_heads = positive_int(root, src, "num_key_value_heads", c.num_heads);
  if (c.num_heads % c.num_kv_heads != 0) {
    fail(ErrorKind::invalid_argument, src, "num_key_value_heads",
         std::to_string(c.num_kv_heads) + " does not divide num_attention_heads " +
             std::to_string(c.num_heads),
         "grouped-query attention needs every KV head to serve the same number of query heads");
  }
  if (find_key(root, "head_dim") == nullptr && c.hidden_size % c.num_heads != 0) {
    fail(ErrorKind::invalid_argument, src, "hidden_size",
         "is not a multiple of num_attention_heads and head_dim is not given", kCheckHint);
  }
  c.head_dim = positive_int(root, src, "head_dim", c.hidden_size / c.num_heads);
  if (c.head_dim % 2 != 0) {
    fail(ErrorKind::invalid_argument, src, "head_dim",
         "must be even for rotary embeddings, got " + std::to_string(c.head_dim), kCheckHint);
  }
  c.vocab_size = positive_int(root, src, "vocab_size", std::nullopt);
  c.max_position_embeddings = positive_int(root, src, "max_position_embeddings", std::nullopt);
  c.rms_norm_eps = positive_double(root, src, "rms_norm_eps", 1e-6);
  read_rope(root, src, c);
  c.tie_word_embeddings = read_bool(root, src, "tie_word_embeddings", false);
  // Qwen2's attention hard-codes q/k/v biases; Llama reads the key.
  c.attention_bias = arch == Architecture::qwen2 || read_bool(root, src, "attention_bias", false);
  // Qwen3's attention always has q_norm and k_norm; no config key turns them off.
  c.qk_norm = arch == Architecture::qwen3 || arch == Architecture::qwen3_moe;
  if (arch == Architecture::mixtral || arch == Architecture::qwen3_moe) read_moe(root, src, arch, c);
  std::vector<int> bos = read_token_ids(root, src, "bos_token_id", c.vocab_size);
  if (bos.size() > 1) {
    fail(ErrorKind::invalid_argument, src, "bos_token_id", "must be a single token id", kCheckHint);
  }
  c.bos_token_id = bos.empty() ? -1 : bos[0];
  c.eos_token_ids = read_token_ids(root, src, "eos_token_id", c.vocab_size);
  reject_unsupported(root, src, arch, c);
  return c;
}

ModelConfig load_model_config(const std::filesystem::path& model_dir) {
  std::filesystem::path file = model_dir / "config.json";
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    throw Error(ErrorKind::not_found, file.string() +
                ": cannot open. Hint: --model must name a Hugging Face checkpoint directory "
                "holding config.json");
  }
  std::ostringstream text;
  text << in.rdbuf();
  return parse_model_config(text.str(), file.string());
}

std::vector<float> rope_inv_freq(const ModelConfig& config) {
  const int D = config.head_dim;
  const RopeScaling& s = config.rope_scaling;
  std::vector<float> inv_freq(static_cast<size_t>(D / 2));
  // Computed in double and rounded once; Hugging Face computes in float32,
  // so the two agree to about one float32 ulp.
  const double kPi = 3.14159265358979323846;
  const double old_context = s.original_max_position_embeddings;
  const double low_freq_wavelen = old_context / s.low_freq_factor;
  const double high_freq_wavelen = old_context / s.high_freq_factor;
  for (int i = 0; i < D / 2; ++i) {
    double f = std::pow(config.rope_theta, -2.0 * i / D);
    switch (s.type) {
      case RopeScaling::Type::none:
        break;
      case RopeScaling::Type::llama3: {
        // Llama 3.1's long-context rule: long wavelengths (low frequencies)
        // are slowed by `factor`, short ones kept, and the band between
        // interpolated linearly in old_context / wavelen.
        double wavelen = 2.0 * kPi / f;
        if (wavelen > low_freq_wavelen) {
          f /= s.factor;
        } else if (wavelen >= high_freq_wavelen) {
          double smooth = (old_context / wavelen - s.low_freq_factor) /
                          (s.high_freq_factor - s.low_freq_factor);
          f = (1.0 - smooth) * f / s.factor + smooth * f;
        }
        break;
      }
    }
    inv_freq[static_cast<size_t>(i)] = static_cast<float>(f);
  }
  return inv_freq;
}

}  // namespace tandem
