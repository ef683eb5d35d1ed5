// The Llama forward pass (see llama_model.h); tensor-parallel collectives
// are marked where they happen.
#include "workers/llama_model.h"

#include <chrono>
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

LlamaModel::LlamaModel(ModelConfig config, LlamaWeights weights, Backend& backend,
                       TensorShard shard)
    : config_(std::move(config)),
      weights_(std::move(weights)),
      backend_(backend),
      shard_(shard),
      layout_(tandem::shard_layout(config_, shard_)) {
  check_weight_shapes();
  for (const LlamaLayerWeights& w : weights_.layers) expert_views_.push_back(w.expert_views());
  inv_freq_host_ = rope_inv_freq(config_);
  inv_freq_ = backend_.allocate(inv_freq_host_.size());
  backend_.upload(inv_freq_host_, inv_freq_.data());
}

void LlamaModel::check_weight_shapes() const {
  // Weights made for another shard (or another model) would index out of
  // their buffers; sizes are enough to tell.
  const size_t C = static_cast<size_t>(config_.hidden_size);
  const size_t I = static_cast<size_t>(layout_.intermediate.count);
  const size_t qkv_rows = static_cast<size_t>(layout_.q_dim() + 2 * layout_.kv_dim());
  const size_t vocab = static_cast<size_t>(layout_.vocab_stride) * C;
  auto check = [&](const char* name, size_t got, size_t expected) {
    require(got == expected, ErrorKind::invalid_argument, [&] {
      return std::string("weights do not fit tensor shard ") + std::to_string(shard_.rank) +
             " of " + std::to_string(shard_.size) + ": " + name + " has " + std::to_string(got) +
             " elements, expected " + std::to_string(expected) +
             ". Hint: load the weights with the same TensorShard as the model";
    });
  };
  check("layer count", weights_.layers.size(), static_cast<size_t>(config_.num_layers));
  check("embed", weights_.embed.size(), vocab);
  if (!weights_.lm_head.empty()) check("lm_head", weights_.lm_head.size(), vocab);
  for (const LlamaLayerWeights& w : weights_.layers) {
    check("qkv", w.qkv.size(), qkv_rows * C);
    const size_t qk_norm = config_.qk_norm ? static_cast<size_t>(config_.head_dim) : 0;
    check("q_norm", w.q_norm.size(), qk_norm);
    check("k_norm", w.k_norm.size(), qk_norm);
    check("o_proj", w.o_proj.size(), C * static_cast<size_t>(layout_.q_dim()));
    const size_t E = static_cast<size_t>(config_.num_experts);
    const size_t dense = config_.is_moe() ? 0 : 1;
    check("gate_up", w.gate_up.size(), dense * 2 * I * C);
    check("down_proj", w.down_proj.size(), dense * C * I);
    check("router", w.router.size(), E * C);
    check("expert count", w.expert_gate_up.size(), E);
    check("expert count", w.expert_down.size(), E);
    for (size_t e = 0; e < E; ++e) {
      check("expert gate_up", w.expert_gate_up[e].size(), 2 * I * C);
      check("expert down", w.expert_down[e].size(), C * I);
    }
  }
}

void LlamaModel::ensure_workspace(int T, int R) {
  if (T > workspace_tokens_) {
    const auto t = static_cast<size_t>(T);
    const auto C = static_cast<size_t>(config_.hidden_size);
    const auto I = static_cast<size_t>(layout_.intermediate.count);
    hidden_ = backend_.allocate(t * C);
    normed_ = backend_.allocate(t * C);
    q_ = backend_.allocate(t * layout_.q_dim());
    k_ = backend_.allocate(t * layout_.kv_dim());
    v_ = backend_.allocate(t * layout_.kv_dim());
    attn_ = backend_.allocate(t * layout_.q_dim());
    if (config_.is_moe()) {
      router_logits_ = backend_.allocate(t * config_.num_experts);
    } else {
      gate_up_ = backend_.allocate(t * 2 * I);
      mlp_ = backend_.allocate(t * I);
    }
    workspace_tokens_ = T;
  }
  if (R > workspace_rows_) {
    const auto r = static_cast<size_t>(R);
    last_hidden_ = backend_.allocate(r * config_.hidden_size);
    if (shard_.rank == 0) logits_ = backend_.allocate(r * config_.vocab_size);
    if (shard_.split()) {
      const size_t slice = r * static_cast<size_t>(layout_.vocab_stride);
      local_logits_ = backend_.allocate(slice);
      if (shard_.rank == 0) gathered_logits_ = backend_.allocate(slice * shard_.size);
    }
    workspace_rows_ = R;
  }
}

void LlamaModel::between_graph_segments(const std::function<void()>& collective) {
  // The ops since the last segment began are one step graph segment:
  // synchronize() replays, captures or runs it and waits for it, so the
  // collective reads finished inputs; the ops after it begin the next. On a
  // device with step graphs, a shard's layer is then two graph launches
  // instead of a dozen kernel launches.
  backend_.synchronize();
  const auto start = std::chrono::steady_clock::now();
  collective();
  communication_seconds_ +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  backend_.begin_step_graph();
}

void LlamaModel::all_reduce(float* data, size_t n) {
  // The communicator works on backend memory (host for the CPU backend,
  // device memory for the NCCL communicator).
  between_graph_segments([&] { shard_.comm->all_reduce_sum(std::span<float>(data, n)); });
}

// Vocabulary-parallel LM head: each rank projects onto its ceil(V/tp) rows,
// TP rank 0 gathers every rank's (R, ceil(V/tp)) block and lays the blocks
// side by side into (R, V).
const float* LlamaModel::gather_logits(int R) {
  const int S = layout_.vocab_stride, tp = shard_.size, V = config_.vocab_size;
  const int C = config_.hidden_size;
  const size_t slice = static_cast<size_t>(R) * S;
  backend_.matmul(last_hidden_.data(), weights_.lm_head_or_embed(), nullptr, R, C, S,
                  local_logits_.data());  // (R, S); padding rows give zeros
  const bool root = shard_.rank == 0;
  between_graph_segments([&] {
    shard_.comm->gather(std::span<const float>(local_logits_.data(), slice),
                        root ? std::span<float>(gathered_logits_.data(), slice * tp)
                             : std::span<float>(),
                        /*root=*/0);
  });
  if (!root) return nullptr;

  if (static_cast<int64_t>(S) * tp == V) {
    // Every block is full: row (r, s) of the (R, tp, S) result is row (s, r)
    // of the gathered (tp, R, S), a row gather the backend does in place.
    reorder_ids_.resize(static_cast<size_t>(R) * tp);
    for (int r = 0; r < R; ++r)
      for (int s = 0; s < tp; ++s) reorder_ids_[static_cast<size_t>(r) * tp + s] = s * R + r;
    backend_.embedding(reorder_ids_, gathered_logits_.data(), S, logits_.data());
    return logits_.data();
  }
  // The last blocks are short (V does not divide): reorder on the host.
  reorder_host_.resize(slice * tp + static_cast<size_t>(R) * V);
  const std::span<float> gathered(reorder_host_.data(), slice * tp);
  const std::span<float> out(reorder_host_.data() + slice * tp, static_cast<size_t>(R) * V);
  backend_.download(gathered_logits_.data(), gathered);
  for (int s = 0; s < tp; ++s) {
    const ShardRange rows = vocab_rows(V, tp, s);
    for (int r = 0; r < R; ++r) {
      const float* from = gathered.data() + (static_cast<size_t>(s) * R + r) * S;
      std::copy(from, from + rows.count, out.data() + static_cast<size_t>(r) * V + rows.begin);
    }
  }
  backend_.upload(out, logits_.data());
  return logits_.data();
}

// The sparse MoE MLP of layer l (kernels/README.md, "MoE layer"): router
// logits, the plan (host), every chosen expert once on its tokens' rows.
// Split: the router is replicated, so every rank routes identically and
// runs each expert on its I/tp slice; the (T, C) partial sums are
// all-reduced by the caller, as the dense MLP's. moe_experts() reads x
// only before it writes out, so both may be normed_.
void LlamaModel::moe_block(int l, int T) {
  const LlamaLayerWeights& w = weights_.layers[static_cast<size_t>(l)];
  const int C = config_.hidden_size, E = config_.num_experts;
  backend_.matmul(normed_.data(), w.router.view(), nullptr, T, C, E,
                  router_logits_.data());  // router_logits (T, E)
  backend_.moe_route(router_logits_.data(), T, E, config_.moe_top_k, config_.moe_norm_topk_prob,
                     moe_plan_);
  moe_experts(backend_, normed_.data(), moe_plan_, expert_views_[static_cast<size_t>(l)], C,
              layout_.intermediate.count, moe_scratch_, normed_.data());
}

const float* LlamaModel::forward(std::span<const SequenceStep> steps, PagedKvCache& cache) {
  require(!steps.empty(), ErrorKind::invalid_argument, "forward called with no sequences");
  communication_seconds_ = 0;
  const int K = layout_.kv_heads.count;
  require(cache.kv_heads() == K, ErrorKind::invalid_argument, [&] {
    return "KV cache holds " + std::to_string(cache.kv_heads()) + " KV heads but this shard has " +
           std::to_string(K) + ". Hint: build the cache with the model's TensorShard";
  });
  const StepLayout layout =
      lay_out(steps, cache, config_.vocab_size, config_.max_position_embeddings);
  const int T = static_cast<int>(layout.tokens.size());
  const int R = static_cast<int>(layout.logit_rows.size());
  const int C = config_.hidden_size;
  // Local sizes: this shard's heads and MLP rows (the full ones when unsplit).
  const int I = layout_.intermediate.count;
  const int H = layout_.q_heads.count;
  const int D = config_.head_dim;
  const int q_dim = layout_.q_dim();
  const int kv_dim = layout_.kv_dim();
  const float eps = static_cast<float>(config_.rms_norm_eps);
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  const bool split = shard_.split();
  const size_t TC = static_cast<size_t>(T) * C;
  ensure_workspace(T, R);
  Backend& be = backend_;
  // The step may be recorded and replayed as one graph (its ops until the
  // synchronize() below); split, as one graph per segment between two
  // collectives (between_graph_segments).
  be.begin_step_graph();

  if (!split) {
    be.embedding(layout.tokens, weights_.embed.view(), C, hidden_.data());  // hidden (T, C)
  } else {
    // Vocabulary-parallel embedding: rows this rank owns, zeros for the
    // rest (id -1); the all-reduce completes every row.
    const ShardRange own = layout_.vocab;
    local_ids_.resize(layout.tokens.size());
    for (size_t t = 0; t < layout.tokens.size(); ++t) {
      const int32_t id = layout.tokens[t] - own.begin;
      local_ids_[t] = id >= 0 && id < own.count ? id : -1;
    }
    be.embedding(local_ids_, weights_.embed.view(), C, hidden_.data());
    all_reduce(hidden_.data(), TC);
  }
  // Each residual add is fused with the norm after it (add_rmsnorm): the
  // first layer's attention norm is the only one on its own.
  be.rmsnorm(hidden_.data(), weights_.layers.front().attn_norm.data(), T, C, eps, normed_.data());
  for (int l = 0; l < config_.num_layers; ++l) {
    const LlamaLayerWeights& w = weights_.layers[static_cast<size_t>(l)];
    const PagedKvView kv = cache.layer(l);

    // Attention block, on normed_ = attn_norm(hidden). The fused qkv matrix
    // is three row ranges, each read straight into its own (T, ·) buffer,
    // in one op. Split: qkv is column-parallel (own heads; input
    // replicated), o_proj row-parallel (own input columns), its (T, C)
    // output all-reduced.
    const float* bias = w.qkv_bias.empty() ? nullptr : w.qkv_bias.data();
    const MatmulOutput qkv_outputs[] = {{q_dim, q_.data()},    // q (T, H*D)
                                        {kv_dim, k_.data()},   // k (T, K*D)
                                        {kv_dim, v_.data()}};  // v (T, K*D)
    be.matmul_parts(normed_.data(), w.qkv.view(), bias, T, C, qkv_outputs);
    if (config_.qk_norm) {
      // Qwen3: each head's D values normalized on their own. A head is D
      // contiguous floats of its row, so (T, H*D) is (T*H, D) rows for the
      // row-wise rmsnorm (one row's result never depends on the others, so
      // batch invariance holds); a shard normalizes its own heads alike.
      be.rmsnorm(q_.data(), w.q_norm.data(), T * H, D, eps, q_.data());
      be.rmsnorm(k_.data(), w.k_norm.data(), T * K, D, eps, k_.data());
    }
    be.rope(q_.data(), layout.positions, H, D, inv_freq_.data());
    be.rope(k_.data(), layout.positions, K, D, inv_freq_.data());
    be.kv_write(k_.data(), v_.data(), layout.slots, kv);
    be.attention(q_.data(), layout.slices, H, kv, scale, attn_.data());           // (T, H*D)
    be.matmul(attn_.data(), w.o_proj.view(), nullptr, T, q_dim, C, normed_.data());
    if (split) all_reduce(normed_.data(), TC);
    be.add_rmsnorm(hidden_.data(), normed_.data(), w.mlp_norm.data(), T, C, eps, normed_.data());

    // MLP block, on normed_ = mlp_norm(hidden), into normed_. Split: gate_up
    // column-parallel (own I/tp), down_proj row-parallel, its (T, C) output
    // all-reduced; a MoE layer splits every expert alike.
    if (config_.is_moe()) {
      moe_block(l, T);
    } else {
      be.matmul(normed_.data(), w.gate_up.view(), nullptr, T, C, 2 * I, gate_up_.data());  // (T, 2I)
      be.swiglu(gate_up_.data(), T, I, mlp_.data());                                       // (T, I)
      be.matmul(mlp_.data(), w.down_proj.view(), nullptr, T, I, C, normed_.data());
    }
    if (split) all_reduce(normed_.data(), TC);
    if (l + 1 < config_.num_layers) {  // and the next layer's attention norm
      const float* next_norm = weights_.layers[static_cast<size_t>(l) + 1].attn_norm.data();
      be.add_rmsnorm(hidden_.data(), normed_.data(), next_norm, T, C, eps, normed_.data());
    } else {
      be.add(hidden_.data(), normed_.data(), TC);
    }
  }

  // Only the rows that need logits pay for the LM head: gather them (the
  // embedding op is a row gather), normalize, project.
  be.embedding(layout.logit_rows, hidden_.data(), C, last_hidden_.data());  // (R, C)
  be.rmsnorm(last_hidden_.data(), weights_.final_norm.data(), R, C, eps, last_hidden_.data());
  const float* logits = nullptr;
  if (!split) {
    be.matmul(last_hidden_.data(), weights_.lm_head_or_embed(), nullptr, R, C, config_.vocab_size,
              logits_.data());  // logits (R, V)
    logits = logits_.data();
  } else {
    logits = gather_logits(R);  // (R, V) on TP rank 0, nullptr elsewhere
  }

  for (const SequenceStep& step : steps)
    cache.set_length(step.seq, cache.length(step.seq) + static_cast<int>(step.tokens.size()));
  logit_rows_ = R;
  // A device backend queues the step; wait for it here, so that every step
  // time measured around forward() (the γ policy's costs, the benches) is
  // the step's and not its launch's. Nothing is lost: whatever comes next
  // (sampling, verification, the next draft round) needs these logits.
  backend_.synchronize();
  return logits;
}

}  // namespace tandem
