// The sparse mixture-of-experts ops on the host: routing (shared by every
// backend, see Backend::moe_route) and the combine of the experts' rows.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "common/error.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/thread_pool.h"

namespace tandem::cpu {
namespace {

// Token t's probabilities (E) in f32: a max-shifted softmax as
// torch.softmax(..., dtype=float) computes it, summed in expert order.
void softmax_row(const float* logits, int E, float* probs) {
  const float max = *std::max_element(logits, logits + E);
  float sum = 0.0f;
  for (int e = 0; e < E; ++e) {
    probs[e] = std::exp(logits[e] - max);
    sum += probs[e];
  }
  for (int e = 0; e < E; ++e) probs[e] /= sum;
}

}  // namespace

void moe_route(const float* router_logits, int T, int E, int top_k, bool norm_topk_prob,
               MoePlan& plan) {
  require(T >= 0 && E >= 1 && top_k >= 1 && top_k <= E, ErrorKind::invalid_argument, [&] {
    return "moe_route: top_k " + std::to_string(top_k) + " of " + std::to_string(E) +
           " experts over " + std::to_string(T) + " tokens (need 1 <= top_k <= experts)";
  });
  plan.tokens = T;
  plan.experts = E;
  plan.top_k = top_k;
  const size_t choices = static_cast<size_t>(T) * top_k;
  plan.expert_ids.assign(choices, 0);
  plan.weights.assign(choices, 0.0f);

  std::vector<float> probs(static_cast<size_t>(E));
  std::vector<int32_t> order(static_cast<size_t>(E));
  for (int t = 0; t < T; ++t) {
    softmax_row(router_logits + static_cast<size_t>(t) * E, E, probs.data());
    // Top-k by descending probability; equal probabilities keep the lower
    // expert index first (a total order, so the choice is deterministic).
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + top_k, order.end(),
                      [&](int32_t a, int32_t b) {
                        return probs[a] != probs[b] ? probs[a] > probs[b] : a < b;
                      });
    float kept = 0.0f;
    for (int k = 0; k < top_k; ++k) kept += probs[order[k]];
    for (int k = 0; k < top_k; ++k) {
      const size_t at = static_cast<size_t>(t) * top_k + k;
      plan.expert_ids[at] = order[k];
      // Mixtral's softmax over the top-k logits is this same ratio: the
      // full softmax's normaliser cancels.
      plan.weights[at] = norm_topk_prob ? probs[order[k]] / kept : probs[order[k]];
    }
  }

  // Grouped per expert by a counting sort over (token, k): tokens ascend
  // within each expert.
  plan.expert_offsets.assign(static_cast<size_t>(E) + 1, 0);
  for (int32_t e : plan.expert_ids) ++plan.expert_offsets[static_cast<size_t>(e) + 1];
  for (int e = 0; e < E; ++e) plan.expert_offsets[e + 1] += plan.expert_offsets[e];
  std::vector<int32_t> next(plan.expert_offsets.begin(), plan.expert_offsets.end() - 1);
  plan.row_tokens.assign(choices, 0);
  plan.row_of_choice.assign(choices, 0);
  for (size_t at = 0; at < choices; ++at) {
    const int32_t row = next[static_cast<size_t>(plan.expert_ids[at])]++;
    plan.row_tokens[static_cast<size_t>(row)] = static_cast<int32_t>(at / top_k);
    plan.row_of_choice[at] = row;
  }
}

void moe_combine(const float* expert_rows, const MoePlan& plan, int C, float* out) {
  const int K = plan.top_k;
  parallel_for(plan.tokens, static_cast<long>(plan.tokens) * C >= (1 << 15), [&](int64_t t) {
    float* dst = out + static_cast<size_t>(t) * C;
    std::fill(dst, dst + C, 0.0f);
    for (int k = 0; k < K; ++k) {  // k order: the same sum whatever the batch
      const size_t at = static_cast<size_t>(t) * K + k;
      const float w = plan.weights[at];
      const float* src = expert_rows + static_cast<size_t>(plan.row_of_choice[at]) * C;
      for (int c = 0; c < C; ++c) dst[c] += w * src[c];
    }
  });
}

}  // namespace tandem::cpu
