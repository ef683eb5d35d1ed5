// A sparse mixture-of-experts layer's experts, over the Backend's ops: the
// SwiGLU FFN of each expert on the rows routed to it (plan from
// Backend::moe_route), weighted and summed per token by Backend::moe_combine.
//
//   plan  = moe_route(router_logits)        (router replicated under TP)
//   rows  = x at plan.row_tokens            (embedding() as a row gather)
//   for each expert e with rows: h_e = rows_e · gate_up_eᵀ  (one matmul)
//   a     = swiglu(h)                       (all rows at once)
//   for each expert e with rows: y_e = a_e · down_eᵀ        (one matmul)
//   out   = moe_combine(y, plan)            (each token's k terms, in k order)
//
// Each expert's weights are read once per step, by one matmul per matrix.
#pragma once

#include <span>

#include "kernels/backend.h"

namespace tandem {

// One expert's SwiGLU FFN in the backend's weight dtype, Hugging Face
// layout: gate_up (2I, C) = [gate_proj; up_proj], down (C, I).
struct MoeExpertWeights {
  WeightView gate_up;
  WeightView down;
};

// Scratch of moe_experts(), grown on demand and reused between calls.
struct MoeScratch {
  Buffer gathered;  // (rows, C)
  Buffer gate_up;   // (rows, 2I)
  Buffer act;       // (rows, I)
  Buffer down;      // (rows, C)
};

// out (T, C) = sum over token t's choices k of plan.weights[t, k] *
// down_e(swiglu(gate_up_e(x[t]))), e = plan.expert_ids[t, k]. x, out: (T, C)
// backend memory; experts (plan.experts) in the backend's weight dtype.
// Batch-invariant wherever the backend's matmul is (see
// Backend::set_batch_invariant): a token's rows go through the same
// operations whichever other tokens share its experts.
void moe_experts(Backend& backend, const float* x, const MoePlan& plan,
                 std::span<const MoeExpertWeights> experts, int C, int I, MoeScratch& scratch,
                 float* out);

}  // namespace tandem
