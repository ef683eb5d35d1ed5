#include "workers/llama_model.h"

#include <cmath>
#include <string>
#include <unordered_set>

#include "common/error.h"

namespace tandem {
namespace {

// Host-side description of one ragged step, built before any work starts so
// that a bad step is rejected without touching the cache.
struct StepLayout {
  std::vector<int32_t> tokens;     // (T)
  std::vector<int32_t> positions;  // (T) absolute positions
  std::vector<int32_t> slots;      // (T) KV cache slots
  std::vector<SequenceSlice> slices;  // (B)
  std::vector<int32_t> logit_rows;    // (R) rows of (T, ...) that get logits
};

StepLayout lay_out(std::span<const SequenceStep> steps, const PagedKvCache& cache, int V,
                   int max_positions) {
  StepLayout layout;
  std::unordered_set<SequenceId> seen;
  for (const SequenceStep& step : steps) {
    // Messages are built only on failure: this runs for every token of every step.
    auto name = [&] { return "sequence " + std::to_string(step.seq); };
    const int start = cache.length(step.seq);
    const int count = static_cast<int>(step.tokens.size());
    require(seen.insert(step.seq).second, ErrorKind::invalid_argument,
            [&] { return name() + " appears twice in one step"; });
    require(count > 0, ErrorKind::invalid_argument, [&] { return name() + " adds no tokens"; });
    require(start + count <= cache.capacity(step.seq), ErrorKind::internal, [&] {
      return name() + " needs " + std::to_string(start + count) + " KV positions but reserved " +
             std::to_string(cache.capacity(step.seq)) + " (reserve before forward)";
    });
    require(start + count <= max_positions, ErrorKind::invalid_argument, [&] {
      return name() + " would reach position " + std::to_string(start + count) +
             ", past the model's max_position_embeddings " + std::to_string(max_positions);
    });
    require(step.logit_count >= 0 && step.logit_count <= count, ErrorKind::invalid_argument, [&] {
      return name() + " asks logits for " + std::to_string(step.logit_count) + " of its " +
             std::to_string(count) + " new tokens";
    });
    const int offset = static_cast<int>(layout.tokens.size());
    for (int j = 0; j < count; ++j) {
      const int32_t token = step.tokens[static_cast<size_t>(j)];
      require(token >= 0 && token < V, ErrorKind::invalid_argument, [&] {
        return name() + " has token id " + std::to_string(token) +
               " outside the vocabulary [0, " + std::to_string(V) + ")";
      });
      layout.tokens.push_back(token);
      layout.positions.push_back(start + j);
      layout.slots.push_back(cache.slot(step.seq, start + j));
    }
    layout.slices.push_back({offset, count, start + count, cache.block_table(step.seq)});
    for (int j = count - step.logit_count; j < count; ++j) layout.logit_rows.push_back(offset + j);
  }
  return layout;
}

}  // namespace

LlamaModel::LlamaModel(ModelConfig config, LlamaWeights weights, Backend& backend)
    : config_(std::move(config)), weights_(std::move(weights)), backend_(backend) {
  inv_freq_host_ = rope_inv_freq(config_);
  inv_freq_ = backend_.allocate(inv_freq_host_.size());
  backend_.upload(inv_freq_host_, inv_freq_.data());
}

void LlamaModel::ensure_workspace(int T, int R) {
  if (T > workspace_tokens_) {
    const auto t = static_cast<size_t>(T);
    const auto C = static_cast<size_t>(config_.hidden_size);
    const auto I = static_cast<size_t>(config_.intermediate_size);
    hidden_ = backend_.allocate(t * C);
    normed_ = backend_.allocate(t * C);
    q_ = backend_.allocate(t * config_.q_dim());
    k_ = backend_.allocate(t * config_.kv_dim());
    v_ = backend_.allocate(t * config_.kv_dim());
    attn_ = backend_.allocate(t * config_.q_dim());
    gate_up_ = backend_.allocate(t * 2 * I);
    mlp_ = backend_.allocate(t * I);
    workspace_tokens_ = T;
  }
  if (R > workspace_rows_) {
    last_hidden_ = backend_.allocate(static_cast<size_t>(R) * config_.hidden_size);
    logits_ = backend_.allocate(static_cast<size_t>(R) * config_.vocab_size);
    workspace_rows_ = R;
  }
}

const float* LlamaModel::forward(std::span<const SequenceStep> steps, PagedKvCache& cache) {
  require(!steps.empty(), ErrorKind::invalid_argument, "forward called with no sequences");
  const StepLayout layout =
      lay_out(steps, cache, config_.vocab_size, config_.max_position_embeddings);
  const int T = static_cast<int>(layout.tokens.size());
  const int R = static_cast<int>(layout.logit_rows.size());
  const int C = config_.hidden_size;
  const int I = config_.intermediate_size;
  const int H = config_.num_heads;
  const int K = config_.num_kv_heads;
  const int D = config_.head_dim;
  const int q_dim = config_.q_dim();
  const int kv_dim = config_.kv_dim();
  const float eps = static_cast<float>(config_.rms_norm_eps);
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  ensure_workspace(T, R);
  Backend& be = backend_;

  be.embedding(layout.tokens, weights_.embed.data(), C, hidden_.data());  // hidden (T, C)
  for (int l = 0; l < config_.num_layers; ++l) {
    const LlamaLayerWeights& w = weights_.layers[static_cast<size_t>(l)];
    const PagedKvView kv = cache.layer(l);

    // Attention block. The fused qkv matrix is three row ranges, so each
    // projection reads its own rows straight into its own (T, ·) buffer.
    be.rmsnorm(hidden_.data(), w.attn_norm.data(), T, C, eps, normed_.data());
    const float* qkv = w.qkv.data();
    const float* bias = w.qkv_bias.empty() ? nullptr : w.qkv_bias.data();
    const size_t k_rows = static_cast<size_t>(q_dim);
    const size_t v_rows = k_rows + kv_dim;
    be.matmul(normed_.data(), qkv, bias, T, C, q_dim, q_.data());                  // q (T, H*D)
    be.matmul(normed_.data(), qkv + k_rows * C, bias ? bias + k_rows : nullptr, T, C, kv_dim,
              k_.data());                                                          // k (T, K*D)
    be.matmul(normed_.data(), qkv + v_rows * C, bias ? bias + v_rows : nullptr, T, C, kv_dim,
              v_.data());                                                          // v (T, K*D)
    be.rope(q_.data(), layout.positions, H, D, inv_freq_.data());
    be.rope(k_.data(), layout.positions, K, D, inv_freq_.data());
    be.kv_write(k_.data(), v_.data(), layout.slots, kv);
    be.attention(q_.data(), layout.slices, H, kv, scale, attn_.data());           // (T, H*D)
    be.matmul(attn_.data(), w.o_proj.data(), nullptr, T, q_dim, C, normed_.data());
    be.add(hidden_.data(), normed_.data(), static_cast<size_t>(T) * C);

    // MLP block.
    be.rmsnorm(hidden_.data(), w.mlp_norm.data(), T, C, eps, normed_.data());
    be.matmul(normed_.data(), w.gate_up.data(), nullptr, T, C, 2 * I, gate_up_.data());  // (T, 2I)
    be.swiglu(gate_up_.data(), T, I, mlp_.data());                                       // (T, I)
    be.matmul(mlp_.data(), w.down_proj.data(), nullptr, T, I, C, normed_.data());
    be.add(hidden_.data(), normed_.data(), static_cast<size_t>(T) * C);
  }

  // Only the rows that need logits pay for the LM head: gather them (the
  // embedding op is a row gather), normalize, project.
  be.embedding(layout.logit_rows, hidden_.data(), C, last_hidden_.data());  // (R, C)
  be.rmsnorm(last_hidden_.data(), weights_.final_norm.data(), R, C, eps, last_hidden_.data());
  be.matmul(last_hidden_.data(), weights_.lm_head_or_embed(), nullptr, R, C, config_.vocab_size,
            logits_.data());  // logits (R, V)

  for (const SequenceStep& step : steps)
    cache.set_length(step.seq, cache.length(step.seq) + static_cast<int>(step.tokens.size()));
  logit_rows_ = R;
  return logits_.data();
}

}  // namespace tandem
