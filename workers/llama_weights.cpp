// Loading a Llama-family checkpoint into backend memory, and the random
// `dummy` weights of the same shapes.
//
// Dimension glossary (as in kernels/backend.h): C hidden size, I MLP
// intermediate size, V vocabulary size; q_dim = H*D, kv_dim = K*D.
// Every matrix keeps Hugging Face's [out, in] layout; q/k/v and gate/up are
// stacked along the output dimension (see llama_weights.h).
#include "workers/llama_weights.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <string>

#include "common/error.h"
#include "kernels/cpu/thread_pool.h"
#include "workers/checkpoint/checkpoint_reader.h"

namespace tandem {
namespace {

// Host staging → a fresh f32 backend buffer (norms, biases).
Buffer to_backend(Backend& backend, std::span<const float> host) {
  Buffer buffer = backend.allocate(host.size());
  if (!host.empty()) backend.upload(host, buffer.data());
  return buffer;
}
// Host staging → a weight matrix in the backend's weight dtype.
Buffer to_backend_matrix(Backend& backend, std::span<const float> host) {
  return backend.upload_weights(host);
}

std::array<int64_t, 2> matrix(int64_t rows, int64_t cols) { return {rows, cols}; }
std::array<int64_t, 1> vector_of(int64_t n) { return {n}; }

// Row range [begin, end) along dimension 0 of a checkpoint tensor.
struct RowSlice {
  int64_t begin;
  int64_t end;
  int64_t count() const { return end - begin; }
};

// Stacks row slices of tensors along dimension 0: part i is rows
// [slice.begin, slice.end) of a (rows_i, cols) tensor and lands after the
// parts before it. Unsplit, each slice is the whole tensor.
struct Part {
  std::string name;
  int64_t rows;    // the full tensor's rows, for the shape check
  RowSlice slice;  // the rows this rank reads
};
std::vector<float> read_stacked(const CheckpointReader& reader, const std::vector<Part>& parts,
                                int64_t cols, bool is_vector) {
  int64_t total_rows = 0;
  for (const Part& p : parts) total_rows += p.slice.count();
  std::vector<float> host(static_cast<size_t>(total_rows * cols));
  size_t offset = 0;
  for (const Part& p : parts) {
    const size_t n = static_cast<size_t>(p.slice.count() * cols);
    std::span<float> out(host.data() + offset, n);
    if (is_vector) {
      reader.read_rows_f32(p.name, vector_of(p.rows), p.slice.begin, p.slice.end, out);
    } else {
      reader.read_rows_f32(p.name, matrix(p.rows, cols), p.slice.begin, p.slice.end, out);
    }
    offset += n;
  }
  return host;
}

// Columns [c0, c1) of a (rows, cols) tensor: the input-dimension slice of a
// row-parallel weight. The whole tensor takes the faster contiguous read.
std::vector<float> read_columns(const CheckpointReader& reader, const std::string& name,
                                int64_t rows, int64_t cols, int64_t c0, int64_t c1) {
  if (c0 == 0 && c1 == cols) return reader.read_f32(name, matrix(rows, cols));
  std::vector<float> host(static_cast<size_t>(rows * (c1 - c0)));
  reader.read_cols_f32(name, matrix(rows, cols), c0, c1, host);
  return host;
}

// This rank's vocabulary rows of a (V, C) tensor, zero-padded to
// layout.vocab_stride rows.
std::vector<float> read_vocab_rows(const CheckpointReader& reader, const std::string& name,
                                   int64_t V, int64_t C, const ShardLayout& layout) {
  std::vector<float> host(static_cast<size_t>(layout.vocab_stride * C), 0.0f);
  const size_t n = static_cast<size_t>(layout.vocab.count) * static_cast<size_t>(C);
  reader.read_rows_f32(name, matrix(V, C), layout.vocab.begin, layout.vocab.end(),
                       std::span<float>(host.data(), n));
  return host;
}

// The row slices of the fused qkv matrix (and its bias) a rank owns.
std::vector<Part> qkv_parts(const std::string& attn, const std::string& suffix,
                            const ModelConfig& config, const ShardLayout& layout) {
  const int64_t D = config.head_dim;
  const RowSlice q{layout.q_heads.begin * D, layout.q_heads.end() * D};
  const RowSlice kv{layout.kv_heads.begin * D, layout.kv_heads.end() * D};
  return {{attn + "q_proj." + suffix, config.q_dim(), q},
          {attn + "k_proj." + suffix, config.kv_dim(), kv},
          {attn + "v_proj." + suffix, config.kv_dim(), kv}};
}

// A MoE layer's router (whole on every rank) and experts (this rank's I/tp
// slice of each), under Hugging Face's names: Mixtral's
// block_sparse_moe.{gate, experts.E.w1 (gate), w3 (up), w2 (down)},
// Qwen3-MoE's mlp.{gate, experts.E.gate_proj, up_proj, down_proj}.
void load_experts(const CheckpointReader& reader, const ModelConfig& config,
                  const std::string& prefix, RowSlice mine, Backend& backend,
                  LlamaLayerWeights& w) {
  const int64_t C = config.hidden_size, I = config.intermediate_size, E = config.num_experts;
  const bool mixtral = config.architecture == "MixtralForCausalLM";
  const std::string block = prefix + (mixtral ? "block_sparse_moe." : "mlp.");
  const char* gate = mixtral ? "w1.weight" : "gate_proj.weight";
  const char* up = mixtral ? "w3.weight" : "up_proj.weight";
  const char* down = mixtral ? "w2.weight" : "down_proj.weight";
  w.router = to_backend(backend, reader.read_f32(block + "gate.weight", matrix(E, C)));
  for (int64_t e = 0; e < E; ++e) {
    const std::string expert = block + "experts." + std::to_string(e) + ".";
    w.expert_gate_up.push_back(to_backend_matrix(
        backend, read_stacked(reader, {{expert + gate, I, mine}, {expert + up, I, mine}}, C,
                              /*is_vector=*/false)));
    w.expert_down.push_back(to_backend_matrix(
        backend, read_columns(reader, expert + down, C, I, mine.begin, mine.end)));
  }
}

LlamaLayerWeights load_layer(const CheckpointReader& reader, const ModelConfig& config,
                             const ShardLayout& layout, int layer, Backend& backend) {
  const int64_t C = config.hidden_size, I = config.intermediate_size;
  const int64_t q_dim = config.q_dim();
  const std::string prefix = "model.layers." + std::to_string(layer) + ".";
  const std::string attn = prefix + "self_attn.";
  const std::string mlp = prefix + "mlp.";
  const RowSlice mine{layout.intermediate.begin, layout.intermediate.end()};
  LlamaLayerWeights w;
  w.attn_norm = to_backend(backend, reader.read_f32(prefix + "input_layernorm.weight", vector_of(C)));
  w.qkv = to_backend_matrix(backend, read_stacked(reader, qkv_parts(attn, "weight", config, layout), C,
                                           /*is_vector=*/false));
  if (config.attention_bias) {
    w.qkv_bias = to_backend(backend, read_stacked(reader, qkv_parts(attn, "bias", config, layout),
                                                  1, /*is_vector=*/true));
  }
  if (config.qk_norm) {
    // (D) each, whole on every shard: each head is normalized alike.
    const auto D = vector_of(config.head_dim);
    w.q_norm = to_backend(backend, reader.read_f32(attn + "q_norm.weight", D));
    w.k_norm = to_backend(backend, reader.read_f32(attn + "k_norm.weight", D));
  }
  w.o_proj = to_backend_matrix(backend, read_columns(reader, attn + "o_proj.weight", C, q_dim,
                                              layout.q_heads.begin * int64_t{layout.head_dim},
                                              layout.q_heads.end() * int64_t{layout.head_dim}));
  w.mlp_norm =
      to_backend(backend, reader.read_f32(prefix + "post_attention_layernorm.weight", vector_of(C)));
  if (config.is_moe()) {
    load_experts(reader, config, prefix, mine, backend, w);
    return w;
  }
  w.gate_up = to_backend_matrix(backend, read_stacked(reader,
                                               {{mlp + "gate_proj.weight", I, mine},
                                                {mlp + "up_proj.weight", I, mine}},
                                               C, /*is_vector=*/false));
  w.down_proj = to_backend_matrix(backend, read_columns(reader, mlp + "down_proj.weight", C, I,
                                                 mine.begin, mine.end));
  return w;
}

void require_sizes(const ModelConfig& config) {
  bool ok = config.hidden_size > 0 && config.intermediate_size > 0 && config.num_layers > 0 &&
            config.num_heads > 0 && config.num_kv_heads > 0 && config.head_dim > 0 &&
            config.vocab_size > 0;
  require(ok, ErrorKind::invalid_argument,
          "model config " + config.architecture +
              " has a non-positive size. Hint: build ModelConfig with parse_model_config");
}

// ---- dummy weights -----------------------------------------------------------

// SplitMix64's finalizer: a strong 64-bit mixer (every input bit flips
// about half the output bits).
uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// ln(u) for u in (0, 1], to about 1e-6 absolute: u = m * 2^e with m in
// [sqrt(1/2), sqrt(2)), ln m = 2 atanh((m-1)/(m+1)) by its series. Plain
// arithmetic instead of libm's logf keeps the loop branch-free and cheap.
float approx_log(float u) {
  const uint32_t ix = std::bit_cast<uint32_t>(u) - 0x3f3504f3u;  // 0x3f3504f3 = sqrt(1/2)
  const int32_t e = static_cast<int32_t>(ix) >> 23;
  const float m = std::bit_cast<float>((ix & 0x007fffffu) + 0x3f3504f3u);
  const float s = (m - 1.0f) / (m + 1.0f), s2 = s * s;
  const float series = 1.0f + s2 * (1.0f / 3 + s2 * (1.0f / 5 + s2 * (1.0f / 7 + s2 * (1.0f / 9))));
  return 2.0f * s * series + static_cast<float>(e) * 0.693147180559945f;
}

// Fills out with normal(0, stddev) values by Box-Muller. Counter-based: the
// tensor is cut into fixed chunks, each keyed by (seed, tensor id, chunk),
// and pair i of a chunk comes from mix64(key + i * golden), so values do not
// depend on the thread count and chunks fill in parallel. Pair i writes
// element i (cosine) and element half + i (sine) of its chunk: contiguous
// stores the compiler can vectorize.
void fill_normal(std::span<float> out, float stddev, uint64_t seed, uint64_t tensor_id) {
  constexpr int64_t kChunk = 1 << 16;
  const int64_t n = static_cast<int64_t>(out.size());
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  const float kPi = 3.14159265358979323846f;
  cpu::parallel_for(chunks, chunks > 1, [&](int64_t c) {
    const uint64_t key = mix64(mix64(mix64(seed) ^ tensor_id) ^ static_cast<uint64_t>(c));
    const int64_t length = std::min(kChunk, n - c * kChunk);
    const int64_t half = (length + 1) / 2;
    float* cos_out = out.data() + c * kChunk;
    float* sin_out = cos_out + half;
    const int64_t sin_count = length - half;
    for (int64_t i = 0; i < half; ++i) {
      const uint64_t h = mix64(key + static_cast<uint64_t>(i) * 0x9e3779b97f4a7c15ull);
      // Two 24-bit uniforms from disjoint bits: u1 in (0, 1] keeps log finite.
      const float u1 = static_cast<float>((h >> 40) + 1) * (1.0f / 16777216.0f);
      const float u2 = static_cast<float>(h & 0xffffffu) * (1.0f / 16777216.0f);
      const float radius = stddev * std::sqrt(-2.0f * approx_log(u1));
      // Angle 2*pi*u2 = pi + 2x with x in [-pi/2, pi/2): Taylor series of
      // sin x and cos x (error < 1e-7 there), then the double-angle rule.
      const float x = kPi * (u2 - 0.5f), x2 = x * x;
      const float sin_x =
          x * (1 + x2 * (-1.0f / 6 + x2 * (1.0f / 120 + x2 * (-1.0f / 5040 +
               x2 * (1.0f / 362880 + x2 * (-1.0f / 39916800))))));
      const float cos_x =
          1 + x2 * (-0.5f + x2 * (1.0f / 24 + x2 * (-1.0f / 720 + x2 * (1.0f / 40320 +
              x2 * (-1.0f / 3628800 + x2 * (1.0f / 479001600))))));
      cos_out[i] = -radius * (cos_x * cos_x - sin_x * sin_x);  // cos(pi + 2x)
      if (i < sin_count) sin_out[i] = -radius * 2.0f * sin_x * cos_x;  // sin(pi + 2x)
    }
  });
}

constexpr float kDummyStddev = 0.02f;  // the usual initializer_range of Llama configs

// Generates tensors through one reused host staging buffer, so its pages are
// faulted in once rather than once per tensor. A shard's tensor is made
// whole, exactly as the unsplit model's, and then sliced: every TP degree
// gets the same model for one seed.
class DummyFactory {
 public:
  DummyFactory(Backend& backend, uint64_t seed) : backend_(backend), seed_(seed) {}

  // Row slices of a (rows, cols) tensor, stacked, then zero rows up to
  // padded_rows (0: no padding).
  Buffer row_slices(int64_t rows, int64_t cols, uint64_t tensor_id,
                    std::span<const RowSlice> slices, int64_t padded_rows = 0) {
    const std::span<const float> whole = full(rows, cols, tensor_id);
    // Slices that tile the tensor in order (the unsplit model) need no copy.
    int64_t kept = 0;
    bool in_order = true;
    for (const RowSlice& s : slices) {
      in_order = in_order && s.begin == kept;
      kept += s.count();
    }
    if (in_order && kept == rows && padded_rows <= rows) return to_backend_matrix(backend_, whole);
    std::vector<float> host(static_cast<size_t>(std::max(kept, padded_rows) * cols), 0.0f);
    float* out = host.data();
    for (const RowSlice& s : slices) {
      out = std::copy(whole.begin() + s.begin * cols, whole.begin() + s.end * cols, out);
    }
    return to_backend_matrix(backend_, host);
  }
  // Columns [c0, c1) of a (rows, cols) tensor.
  Buffer column_slice(int64_t rows, int64_t cols, uint64_t tensor_id, int64_t c0, int64_t c1) {
    const std::span<const float> whole = full(rows, cols, tensor_id);
    if (c0 == 0 && c1 == cols) return to_backend_matrix(backend_, whole);
    std::vector<float> host(static_cast<size_t>(rows * (c1 - c0)));
    for (int64_t r = 0; r < rows; ++r) {
      std::copy(whole.begin() + r * cols + c0, whole.begin() + r * cols + c1,
                host.begin() + r * (c1 - c0));
    }
    return to_backend_matrix(backend_, host);
  }
  // A whole (rows, cols) f32 matrix of normal(0, stddev) values.
  Buffer f32_matrix(int64_t rows, int64_t cols, uint64_t tensor_id, float stddev) {
    std::span<float> host = staging(rows * cols);
    fill_normal(host, stddev, seed_, tensor_id);
    return to_backend(backend_, host);
  }
  Buffer ones(int64_t n) {
    std::span<float> host = staging(n);
    std::fill(host.begin(), host.end(), 1.0f);
    return to_backend(backend_, host);
  }

 private:
  std::span<float> full(int64_t rows, int64_t cols, uint64_t tensor_id) {
    std::span<float> host = staging(rows * cols);
    fill_normal(host, kDummyStddev, seed_, tensor_id);
    return host;
  }
  std::span<float> staging(int64_t n) {
    if (staging_.size() < static_cast<size_t>(n)) staging_.resize(static_cast<size_t>(n));
    return {staging_.data(), static_cast<size_t>(n)};
  }

  Backend& backend_;
  uint64_t seed_;
  std::vector<float> staging_;
};

}  // namespace

std::vector<MoeExpertWeights> LlamaLayerWeights::expert_views() const {
  std::vector<MoeExpertWeights> views;
  for (size_t e = 0; e < expert_gate_up.size(); ++e) {
    views.push_back({expert_gate_up[e].view(), expert_down[e].view()});
  }
  return views;
}

int64_t LlamaWeights::bytes_read_per_step() const {
  // Every layer matrix, bias and norm is read in full each step; so is the
  // LM head (tied or not, once). The embedding is only gathered, T rows of
  // (V, C), which is negligible next to the rest and is not counted.
  auto bytes = [](const Buffer& b) { return b.size() * dtype_size(b.dtype()); };
  size_t total = bytes(final_norm) + bytes(lm_head.empty() ? embed : lm_head);
  for (const LlamaLayerWeights& l : layers) {
    total += bytes(l.attn_norm) + bytes(l.qkv) + bytes(l.qkv_bias) + bytes(l.q_norm) +
             bytes(l.k_norm) + bytes(l.o_proj) +
             bytes(l.mlp_norm) + bytes(l.gate_up) + bytes(l.down_proj) + bytes(l.router);
    for (size_t e = 0; e < l.expert_gate_up.size(); ++e) {
      total += bytes(l.expert_gate_up[e]) + bytes(l.expert_down[e]);
    }
  }
  return static_cast<int64_t>(total);
}

LlamaWeights load_llama_weights(const std::filesystem::path& model_dir, const ModelConfig& config,
                                Backend& backend, const TensorShard& shard) {
  require_sizes(config);
  const ShardLayout layout = shard_layout(config, shard);
  CheckpointReader reader(model_dir);
  const int64_t C = config.hidden_size, V = config.vocab_size;
  LlamaWeights w;
  w.embed = to_backend_matrix(backend, read_vocab_rows(reader, "model.embed_tokens.weight", V, C, layout));
  w.layers.reserve(static_cast<size_t>(config.num_layers));
  for (int layer = 0; layer < config.num_layers; ++layer) {
    w.layers.push_back(load_layer(reader, config, layout, layer, backend));
  }
  w.final_norm = to_backend(backend, reader.read_f32("model.norm.weight", vector_of(C)));
  if (!config.tie_word_embeddings) {
    // Checked here for a message that points at the config key, not only the tensor.
    require(reader.contains("lm_head.weight"), ErrorKind::not_found,
            model_dir.string() + ": tensor 'lm_head.weight' not found in any safetensors file, "
                                 "and config.json says tie_word_embeddings is false. Hint: if "
                                 "the model shares its embedding with the LM head, set "
                                 "tie_word_embeddings to true");
    w.lm_head = to_backend_matrix(backend, read_vocab_rows(reader, "lm_head.weight", V, C, layout));
  }
  w.checkpoint_bytes_read = reader.bytes_read();
  return w;
}

LlamaWeights make_dummy_weights(const ModelConfig& config, uint64_t seed, Backend& backend,
                                const TensorShard& shard) {
  require_sizes(config);
  const ShardLayout layout = shard_layout(config, shard);
  const int64_t C = config.hidden_size, I = config.intermediate_size, V = config.vocab_size;
  const int64_t D = config.head_dim, q_dim = config.q_dim(), kv_dim = config.kv_dim();
  const int64_t qkv_rows = q_dim + 2 * kv_dim;
  // Slices of the fused unsplit tensors: qkv is [Wq; Wk; Wv], gate_up [W_gate; W_up].
  const int64_t k0 = q_dim + layout.kv_heads.begin * D, k1 = q_dim + layout.kv_heads.end() * D;
  const RowSlice qkv_mine[3] = {{layout.q_heads.begin * D, layout.q_heads.end() * D},
                                {k0, k1},
                                {k0 + kv_dim, k1 + kv_dim}};
  const RowSlice gate_up_mine[2] = {{layout.intermediate.begin, layout.intermediate.end()},
                                    {I + layout.intermediate.begin, I + layout.intermediate.end()}};
  const RowSlice vocab_mine[1] = {{layout.vocab.begin, layout.vocab.end()}};
  DummyFactory make(backend, seed);
  // Tensor ids: 0 embed, 1 LM head, then 4 matrices per layer.
  LlamaWeights w;
  w.embed = make.row_slices(V, C, 0, vocab_mine, layout.vocab_stride);
  for (int layer = 0; layer < config.num_layers; ++layer) {
    const uint64_t id = 2 + 4 * static_cast<uint64_t>(layer);
    LlamaLayerWeights l;
    l.attn_norm = make.ones(C);
    l.qkv = make.row_slices(qkv_rows, C, id, qkv_mine);
    // Biases are zero, which allocate() already gives.
    if (config.attention_bias) {
      l.qkv_bias = backend.allocate(static_cast<size_t>(layout.q_dim() + 2 * layout.kv_dim()));
    }
    if (config.qk_norm) {
      l.q_norm = make.ones(D);
      l.k_norm = make.ones(D);
    }
    l.o_proj = make.column_slice(C, q_dim, id + 1, layout.q_heads.begin * D,
                                 layout.q_heads.end() * D);
    l.mlp_norm = make.ones(C);
    if (config.is_moe()) {
      // Experts' ids lie above 2^32, clear of the dense tensors'. The router
      // is replicated and f32 (llama_weights.h), its std 1 so that tokens
      // spread over the experts rather than ride near-ties.
      const int64_t E = config.num_experts;
      const uint64_t base = (uint64_t{1} << 32) + static_cast<uint64_t>(layer * (2 * E + 1));
      l.router = make.f32_matrix(E, C, base, 1.0f);
      for (int64_t e = 0; e < E; ++e) {
        l.expert_gate_up.push_back(
            make.row_slices(2 * I, C, base + 1 + 2 * static_cast<uint64_t>(e), gate_up_mine));
        l.expert_down.push_back(make.column_slice(C, I, base + 2 + 2 * static_cast<uint64_t>(e),
                                                  layout.intermediate.begin,
                                                  layout.intermediate.end()));
      }
    } else {
      l.gate_up = make.row_slices(2 * I, C, id + 2, gate_up_mine);
      l.down_proj = make.column_slice(C, I, id + 3, layout.intermediate.begin,
                                      layout.intermediate.end());
    }
    w.layers.push_back(std::move(l));
  }
  w.final_norm = make.ones(C);
  if (!config.tie_word_embeddings) w.lm_head = make.row_slices(V, C, 1, vocab_mine, layout.vocab_stride);
  return w;
}

}  // namespace tandem
