// Entry points of the CPU model ops, one .cpp file each. These are the
// reference implementations: each reads like the math, and every other backend
// is tested against them. Shapes use the glossary of kernels/backend.h.
// Sampling ops live in kernels/cpu/sampling.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "kernels/backend.h"

namespace tandem::cpu {

// embedding.cpp: out (T, C) = table (V, C) rows at token_ids (T), widened to
// f32 from a bf16 or f16 table (exactly).
void embedding(std::span<const int32_t> token_ids, WeightView table, int C, float* out);

// rmsnorm.cpp: out (T, C) = x / sqrt(mean(x^2) + eps) * weight (C).
void rmsnorm(const float* x, const float* weight, int T, int C, float eps, float* out);
// rmsnorm.cpp: x (T, C) += y, then out = rmsnorm(x); out may alias y.
void add_rmsnorm(float* x, const float* y, const float* weight, int T, int C, float eps,
                 float* out);

// matmul.cpp: y (T, N) = x (T, Kin) · w (N, Kin)ᵀ + bias (N, optional); each
// element computed the same way whatever T is (batch-invariant). Over
// `outputs`: w's consecutive row ranges, each into its own (T, rows) output
// (Backend::matmul_parts), in one parallel section where the rows are few.
void matmul(const float* x, const float* w, const float* bias, int T, int Kin,
            std::span<const MatmulOutput> outputs);
// matmul_bf16.cpp: the same with w in bf16 or f16; each element
// bit-identical to matmul() on the widened weights (matmul_lanes.h).
void matmul_bf16(const float* x, const uint16_t* w, const float* bias, int T, int Kin,
                 std::span<const MatmulOutput> outputs);
void matmul_f16(const float* x, const uint16_t* w, const float* bias, int T, int Kin,
                std::span<const MatmulOutput> outputs);

// One output, y (T, N).
inline void matmul(const float* x, const float* w, const float* bias, int T, int Kin, int N, float* y) {
  const MatmulOutput out{N, y};
  matmul(x, w, bias, T, Kin, std::span(&out, 1));
}
inline void matmul_bf16(const float* x, const uint16_t* w, const float* bias, int T, int Kin, int N,
                        float* y) {
  const MatmulOutput out{N, y};
  matmul_bf16(x, w, bias, T, Kin, std::span(&out, 1));
}
inline void matmul_f16(const float* x, const uint16_t* w, const float* bias, int T, int Kin, int N,
                       float* y) {
  const MatmulOutput out{N, y};
  matmul_f16(x, w, bias, T, Kin, std::span(&out, 1));
}

// rope.cpp: rotate-half rotary embedding of x (T, heads, D) in place.
void rope(float* x, std::span<const int32_t> positions, int heads, int D, const float* inv_freq);

// kv_write.cpp: k, v (T, K*D) into their cache slots.
void kv_write(const float* k, const float* v, std::span<const int32_t> slots,
              const PagedKvView& cache);

// attention.cpp: causal paged attention; q, out (T, H*D).
void attention(const float* q, std::span<const SequenceSlice> slices, int H,
               const PagedKvView& cache, float scale, float* out);

// swiglu.cpp: out (T, I) = silu(gate) * up with gate_up (T, 2I) = [gate | up].
void swiglu(const float* gate_up, int T, int I, float* out);

// add.cpp: x (n) += y (n).
void add(float* x, const float* y, size_t n);

// moe.cpp: routing of router_logits (T, E) into plan (Backend::moe_route's
// definition), and the combine of the experts' grouped rows (rows, C) into
// out (T, C), each token's top_k contributions summed in k order.
void moe_route(const float* router_logits, int T, int E, int top_k, bool norm_topk_prob,
               MoePlan& plan);
void moe_combine(const float* expert_rows, const MoePlan& plan, int C, float* out);

}  // namespace tandem::cpu
