// moe_experts() over the Backend's ops, and the default Backend::moe_route
// (routing on the host). See kernels/moe.h.
#include "kernels/moe.h"

#include <algorithm>
#include <string>
#include <vector>

#include "common/error.h"
#include "kernels/cpu/ops.h"

namespace tandem {
namespace {

// `buffer` holds at least `count` floats of `backend` (contents undefined).
float* at_least(Backend& backend, Buffer& buffer, size_t count) {
  if (buffer.size() < count) {
    buffer.reset();  // free before allocating: scratch may be large
    buffer = backend.allocate(count);
  }
  return buffer.data();
}

}  // namespace

void Backend::moe_route(const float* router_logits, int T, int E, int top_k, bool norm_topk_prob,
                        MoePlan& plan) {
  std::vector<float> logits(static_cast<size_t>(std::max(T, 0)) * std::max(E, 0));
  if (!logits.empty()) download(router_logits, logits);
  cpu::moe_route(logits.data(), T, E, top_k, norm_topk_prob, plan);
}

void moe_experts(Backend& backend, const float* x, const MoePlan& plan,
                 std::span<const MoeExpertWeights> experts, int C, int I, MoeScratch& scratch,
                 float* out) {
  require(experts.size() == static_cast<size_t>(plan.experts), ErrorKind::invalid_argument, [&] {
    return "moe_experts: " + std::to_string(experts.size()) + " experts' weights for a plan over " +
           std::to_string(plan.experts);
  });
  const size_t rows = static_cast<size_t>(plan.rows());
  if (rows == 0) return;
  float* gathered = at_least(backend, scratch.gathered, rows * C);
  float* gate_up = at_least(backend, scratch.gate_up, rows * 2 * I);
  float* act = at_least(backend, scratch.act, rows * I);
  float* down = at_least(backend, scratch.down, rows * C);

  // Each grouped row is a copy of its token's x: embedding() over an f32
  // table is a row gather.
  backend.embedding(plan.row_tokens, WeightView(x), C, gathered);
  for (int e = 0; e < plan.experts; ++e) {
    const int n = plan.expert_rows(e);
    if (n == 0) continue;  // an expert no token chose: its weights stay unread
    const size_t first = static_cast<size_t>(plan.expert_offsets[e]);
    backend.matmul(gathered + first * C, experts[e].gate_up, nullptr, n, C, 2 * I,
                   gate_up + first * 2 * I);
  }
  backend.swiglu(gate_up, static_cast<int>(rows), I, act);
  for (int e = 0; e < plan.experts; ++e) {
    const int n = plan.expert_rows(e);
    if (n == 0) continue;
    const size_t first = static_cast<size_t>(plan.expert_offsets[e]);
    backend.matmul(act + first * I, experts[e].down, nullptr, n, I, C, down + first * C);
  }
  backend.moe_combine(down, plan, C, out);
}

}  // namespace tandem
