#!/usr/bin/env python3
"""Independent float64 reference of the sparse mixture-of-experts layer.

Usage: moe_reference.py OUT_DIR

Writes OUT_DIR/<case>.json for each case below: a random hidden state x
(T, C), the router's weight gate (E, C), every expert's gate_proj (I, C),
up_proj (I, C) and down_proj (C, I), and what the layer computes in float64,
written from the Hugging Face definitions (transformers'
MixtralSparseMoeBlock and Qwen3MoeSparseMoeBlock):

    router_logits = x @ gate.T
    probs = softmax(router_logits) ; top_k of probs (weights, experts)
    weights /= weights.sum()            # Mixtral always; Qwen3-MoE if norm_topk_prob
    out[t] = sum_k weights[t, k] * down(silu(gate_proj(x[t])) * up_proj(x[t]))

Every value written is a float32 (the C++ side reads them exactly), and the
reference is computed from those float32 values in float64. Mixtral's
weights are also computed the way the original Mistral code does, a softmax
over the top-k logits alone, and must agree (the full softmax's normaliser
cancels in the renormalisation).

Routing near-ties are avoided: a token whose k-th and (k+1)-th router
logits are within TIE_MARGIN is drawn again (a float32 matmul could order
them otherwise); the count of redraws is written as "redrawn_tokens".
No code is shared with the C++ implementation.
"""
import json
import os
import sys

import numpy as np

TIE_MARGIN = 1e-3

CASES = {
    # name: (T, C, I, E, top_k, norm_topk_prob)
    "mixtral_top2_of_8": (24, 64, 96, 8, 2, True),
    "qwen3moe_top4_of_16_norm": (24, 64, 48, 16, 4, True),
    "qwen3moe_top4_of_16_no_norm": (24, 64, 48, 16, 4, False),
}


def f32(a):
    return np.asarray(a, dtype=np.float32).astype(np.float64)


def silu(v):
    return v / (1.0 + np.exp(-v))


def softmax(v):
    e = np.exp(v - v.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def top_k(probs, k):
    # Descending; equal values keep the lower index first (stable sort).
    order = np.argsort(-probs, axis=-1, kind="stable")[:, :k]
    return np.take_along_axis(probs, order, axis=-1), order


def sparse_moe_block(x, gate, experts, k, norm_topk_prob):
    """The Hugging Face block's forward, float64."""
    router_logits = x @ gate.T
    routing_weights, selected = top_k(softmax(router_logits), k)
    if norm_topk_prob:
        routing_weights = routing_weights / routing_weights.sum(axis=-1, keepdims=True)
    out = np.zeros_like(x)
    for e, (w_gate, w_up, w_down) in enumerate(experts):
        token, slot = np.nonzero(selected == e)
        if token.size == 0:
            continue
        h = x[token]
        y = (silu(h @ w_gate.T) * (h @ w_up.T)) @ w_down.T
        np.add.at(out, token, y * routing_weights[token, slot][:, None])
    return out, selected, routing_weights, router_logits


def mistral_weights(router_logits, selected):
    """Mistral's original routing: softmax over the chosen logits only."""
    chosen = np.take_along_axis(router_logits, selected, axis=-1)
    return softmax(chosen)


def build_case(name, shape, seed):
    T, C, I, E, k, norm = shape
    rng = np.random.default_rng(seed)
    gate = f32(rng.normal(0, 2.0 / np.sqrt(C), (E, C)))
    experts = [(f32(rng.normal(0, 1 / np.sqrt(C), (I, C))),
                f32(rng.normal(0, 1 / np.sqrt(C), (I, C))),
                f32(rng.normal(0, 1 / np.sqrt(I), (C, I)))) for _ in range(E)]
    x = f32(rng.normal(0, 1, (T, C)))
    redrawn = 0
    for t in range(T):
        for _ in range(1000):
            logits = np.sort(x[t] @ gate.T)[::-1]
            if logits[k - 1] - logits[k] >= TIE_MARGIN:
                break
            x[t] = f32(rng.normal(0, 1, C))
            redrawn += 1
        else:
            sys.exit(f"{name}: no token without a routing near-tie")
    out, selected, weights, router_logits = sparse_moe_block(x, gate, experts, k, norm)
    if norm:
        assert np.allclose(weights, mistral_weights(router_logits, selected), rtol=0, atol=1e-12)
    return {
        "tokens": T, "hidden": C, "intermediate": I, "experts": E, "top_k": k,
        "norm_topk_prob": norm, "redrawn_tokens": redrawn,
        "x": x.ravel().tolist(), "gate": gate.ravel().tolist(),
        "gate_proj": [w[0].ravel().tolist() for w in experts],
        "up_proj": [w[1].ravel().tolist() for w in experts],
        "down_proj": [w[2].ravel().tolist() for w in experts],
        "router_logits": router_logits.ravel().tolist(),
        "expert_ids": selected.ravel().tolist(),
        "weights": weights.ravel().tolist(),
        "mistral_weights": mistral_weights(router_logits, selected).ravel().tolist(),
        "out": out.ravel().tolist(),
    }


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    os.makedirs(sys.argv[1], exist_ok=True)
    for i, (name, shape) in enumerate(sorted(CASES.items())):
        with open(os.path.join(sys.argv[1], name + ".json"), "w") as f:
            json.dump(build_case(name, shape, seed=2500 + i), f)


if __name__ == "__main__":
    main()
