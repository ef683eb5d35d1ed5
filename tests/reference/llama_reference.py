#!/usr/bin/env python3
"""An independent Llama-family forward pass in NumPy (Llama, Qwen2, Qwen3, and
the sparse mixture-of-experts Mixtral and Qwen3-MoE), and the checkpoints it
checks.

Writes into OUT_DIR, for each variant, a small random Hugging Face checkpoint
(config.json + safetensors written by hand here) and `scenario.json`: a list
of ragged batched steps (sequences adding tokens, some truncated as a rejected
draft would be) with the logits this reference computes for every requested
row. The C++ test replays the steps through LlamaModel and its paged KV cache
and compares.

The reference shares no code or layout with the C++ side: it recomputes every
sequence from position 0 in float64 (no KV cache), uses Hugging Face tensor
names and shapes directly, and applies RoPE by building the rotation the way
Hugging Face's LlamaRotaryEmbedding describes it. A MoE layer follows
transformers' MixtralSparseMoeBlock / Qwen3MoeSparseMoeBlock: softmax over the
router logits, the top-k probabilities (renormalised: Mixtral always,
Qwen3-MoE when norm_topk_prob), each token's experts' SwiGLU outputs summed
with those weights. Routing near-ties are avoided: when any token of the
scenario has its k-th and (k+1)-th router logits within TIE_MARGIN (float32
arithmetic could order them otherwise), the variant's weights and scenario
are drawn again; the attempts taken are written as "draws".

Usage: llama_reference.py OUT_DIR
"""
import json
import math
import os
import struct
import sys

import numpy as np

VARIANTS = {
    # GQA (8 query heads over 2 KV heads), llama3 RoPE scaling hitting all
    # three frequency bands, untied LM head, F32 in one file.
    "llama_gqa": dict(
        architectures=["LlamaForCausalLM"], hidden_size=64, intermediate_size=96,
        num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=2, head_dim=8,
        vocab_size=101, max_position_embeddings=64, rms_norm_eps=1e-5, rope_theta=10000.0,
        rope_scaling=dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0,
                          high_freq_factor=4.0, original_max_position_embeddings=16),
        tie_word_embeddings=False, bos_token_id=1, eos_token_id=[2, 3],
        dtype="F32", shards=1),
    # Qwen2: q/k/v biases, tied embeddings, BF16 sharded over two files.
    "qwen2_bias": dict(
        architectures=["Qwen2ForCausalLM"], hidden_size=48, intermediate_size=80,
        num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2,
        vocab_size=97, max_position_embeddings=64, rms_norm_eps=1e-6, rope_theta=1000.0,
        rope_scaling=None, tie_word_embeddings=True, bos_token_id=5, eos_token_id=6,
        dtype="BF16", shards=2),
    # Qwen3: per-head RMSNorm of queries and keys before RoPE (q_norm,
    # k_norm), head_dim 32 with hidden_size 64 over 4 heads (q_dim 128, not
    # hidden), tied embeddings, F32 in one file.
    "qwen3_qk_norm": dict(
        architectures=["Qwen3ForCausalLM"], hidden_size=64, intermediate_size=96,
        num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2, head_dim=32,
        vocab_size=103, max_position_embeddings=64, rms_norm_eps=1e-6, rope_theta=1000000.0,
        rope_scaling=None, attention_bias=False, use_sliding_window=False, sliding_window=None,
        max_window_layers=3, tie_word_embeddings=True, bos_token_id=4, eos_token_id=7,
        dtype="F32", shards=1),
    # Mixtral: 8 experts, top-2 (always renormalised), per-expert tensors
    # block_sparse_moe.experts.E.w1/w3/w2 and the router block_sparse_moe.gate,
    # BF16 sharded over three files (an expert's tensors may straddle files).
    "mixtral_moe": dict(
        architectures=["MixtralForCausalLM"], hidden_size=64, intermediate_size=48,
        num_local_experts=8, num_experts_per_tok=2, num_hidden_layers=3,
        num_attention_heads=8, num_key_value_heads=2, vocab_size=89,
        max_position_embeddings=64, rms_norm_eps=1e-5, rope_theta=1000000.0,
        sliding_window=None, router_aux_loss_coef=0.02, tie_word_embeddings=False,
        bos_token_id=1, eos_token_id=2, dtype="BF16", shards=3),
    # Qwen3-MoE: 16 experts, top-4 with norm_topk_prob, Qwen3's q/k norms,
    # mlp.experts.E.gate_proj/up_proj/down_proj, moe_intermediate_size 32
    # (intermediate_size, the dense layers' width, unused), F32 in one file.
    "qwen3_moe": dict(
        architectures=["Qwen3MoeForCausalLM"], hidden_size=64, intermediate_size=96,
        moe_intermediate_size=32, num_experts=16, num_experts_per_tok=4, norm_topk_prob=True,
        decoder_sparse_step=1, mlp_only_layers=[], num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=32, vocab_size=79,
        max_position_embeddings=64, rms_norm_eps=1e-6, rope_theta=1000000.0,
        rope_scaling=None, attention_bias=False, use_sliding_window=False,
        sliding_window=None, tie_word_embeddings=False, bos_token_id=4, eos_token_id=7,
        dtype="F32", shards=1),
}

TIE_MARGIN = 1e-3
MOE_NAMES = {  # architecture: (block, router, gate, up, down)
    "MixtralForCausalLM": ("block_sparse_moe", "gate", "w1", "w3", "w2"),
    "Qwen3MoeForCausalLM": ("mlp", "gate", "gate_proj", "up_proj", "down_proj"),
}

# Steps of the ragged batch, the same for every variant. Each op is
# ["forward", [[seq, tokens, logit_count], ...]] or ["truncate", seq, length]:
# logit_count trailing new tokens get logits (γ+1 when verifying, 1 when decoding).
def make_scenario(rng, vocab):
    toks = lambda n: [int(t) for t in rng.integers(0, vocab, size=n)]
    return [
        ["forward", [["a", toks(7), 7], ["b", toks(3), 1]]],                   # two prefills
        ["forward", [["a", toks(1), 1], ["b", toks(4), 4], ["c", toks(5), 3]]],  # c: prompt + 2 drafts
        ["forward", [["c", toks(1), 1], ["a", toks(3), 3], ["b", toks(1), 1]]],
        ["truncate", "a", 9],   # a rejected draft: drop a's last two positions
        ["truncate", "c", 4],
        ["forward", [["a", toks(2), 2], ["c", toks(3), 3]]],
        ["forward", [["b", toks(9), 9], ["a", toks(1), 1]]],                   # b crosses blocks
        ["forward", [["c", toks(1), 1]]],                                      # batch-1 decode
        ["forward", [["c", toks(2), 2]]],
    ]


# The tensors a bf16 backend stores in bf16 (workers/llama_weights.cpp's
# to_backend_matrix); everything else stays f32.
# (A MoE router, "gate.weight", stays f32.)
MATRIX_SUFFIXES = ("proj.weight", "embed_tokens.weight", "lm_head.weight", "w1.weight",
                   "w2.weight", "w3.weight")


def bf16_round(x):
    """float32 -> nearest bfloat16 (ties to even), returned as float32 and raw bits."""
    bits = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    return (rounded.astype(np.uint32) << 16).view(np.float32), rounded


def make_weights(cfg, rng):
    C, I, V = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    H, K = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    D = cfg.get("head_dim", C // H)
    bias = cfg["architectures"][0] == "Qwen2ForCausalLM"
    qk_norm = cfg["architectures"][0] in ("Qwen3ForCausalLM", "Qwen3MoeForCausalLM")
    moe = MOE_NAMES.get(cfg["architectures"][0])
    n = lambda *shape, s=0.2: (rng.standard_normal(shape) * s).astype(np.float32)
    w = {"model.embed_tokens.weight": n(V, C, s=1.0), "model.norm.weight": 1 + n(C, s=0.1)}
    for l in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{l}."
        w[p + "input_layernorm.weight"] = 1 + n(C, s=0.1)
        w[p + "post_attention_layernorm.weight"] = 1 + n(C, s=0.1)
        w[p + "self_attn.q_proj.weight"] = n(H * D, C)
        w[p + "self_attn.k_proj.weight"] = n(K * D, C)
        w[p + "self_attn.v_proj.weight"] = n(K * D, C)
        w[p + "self_attn.o_proj.weight"] = n(C, H * D)
        if bias:
            for name, rows in (("q", H * D), ("k", K * D), ("v", K * D)):
                w[p + f"self_attn.{name}_proj.bias"] = n(rows, s=0.5)
        if qk_norm:  # one (D) weight each, shared by all heads; far from ones
            w[p + "self_attn.q_norm.weight"] = 1 + n(D, s=0.5)
            w[p + "self_attn.k_norm.weight"] = 1 + n(D, s=0.5)
        if moe:
            block, router, gate, up, down = moe
            E, I_e = num_experts(cfg), cfg.get("moe_intermediate_size", I)
            w[p + f"{block}.{router}.weight"] = n(E, C, s=0.5)  # spread, not near-tied
            for e in range(E):
                x = p + f"{block}.experts.{e}."
                w[x + f"{gate}.weight"] = n(I_e, C)
                w[x + f"{up}.weight"] = n(I_e, C)
                w[x + f"{down}.weight"] = n(C, I_e)
            continue
        w[p + "mlp.gate_proj.weight"] = n(I, C)
        w[p + "mlp.up_proj.weight"] = n(I, C)
        w[p + "mlp.down_proj.weight"] = n(C, I)
    if not cfg["tie_word_embeddings"]:
        w["lm_head.weight"] = n(V, C)
    return w


def num_experts(cfg):
    return cfg.get("num_local_experts", cfg.get("num_experts"))


def write_safetensors(path, tensors, dtype):
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        array = tensors[name]
        raw = bf16_round(array)[1].tobytes() if dtype == "BF16" else array.astype("<f4").tobytes()
        header[name] = {"dtype": dtype, "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    header["__metadata__"] = {"format": "pt"}
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)  # keep the data 8-byte aligned, as the format suggests
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for raw in blobs:
            f.write(raw)


def write_checkpoint(out_dir, cfg, weights):
    os.makedirs(out_dir, exist_ok=True)
    config = {k: v for k, v in cfg.items() if k not in ("dtype", "shards")}
    config["model_type"] = {"Qwen2ForCausalLM": "qwen2", "Qwen3ForCausalLM": "qwen3",
                            "MixtralForCausalLM": "mixtral",
                            "Qwen3MoeForCausalLM": "qwen3_moe"}.get(cfg["architectures"][0],
                                                                     "llama")
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(config, f, indent=1)
    names = sorted(weights)
    if cfg["shards"] == 1:
        write_safetensors(os.path.join(out_dir, "model.safetensors"), weights, cfg["dtype"])
        return
    weight_map = {}
    for s in range(cfg["shards"]):
        file = f"model-{s + 1:05d}-of-{cfg['shards']:05d}.safetensors"
        part = {n: weights[n] for n in names[s::cfg["shards"]]}
        write_safetensors(os.path.join(out_dir, file), part, cfg["dtype"])
        weight_map.update({n: file for n in part})
    with open(os.path.join(out_dir, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {}, "weight_map": weight_map}, f, indent=1)


def inv_freq(cfg, D):
    freq = 1.0 / cfg["rope_theta"] ** (np.arange(0, D, 2, dtype=np.float64) / D)
    rs = cfg.get("rope_scaling")
    if not rs:
        return freq
    # Llama 3.1's frequency-dependent scaling, as published with the model.
    factor, low, high = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"]
    old_len = rs["original_max_position_embeddings"]
    out = []
    for f in freq:
        wavelen = 2 * math.pi / f
        if wavelen < old_len / high:
            out.append(f)
        elif wavelen > old_len / low:
            out.append(f / factor)
        else:
            smooth = (old_len / wavelen - low) / (high - low)
            out.append((1 - smooth) * f / factor + smooth * f)
    return np.array(out)


def rms_norm(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def rotate(x, positions, freq):
    """x: (T, heads, D). Rotation of pair (i, i + D/2) by angle position * freq[i]."""
    angles = np.outer(positions, freq)                    # (T, D/2)
    cos = np.concatenate([np.cos(angles)] * 2, axis=-1)[:, None, :]
    sin = np.concatenate([np.sin(angles)] * 2, axis=-1)[:, None, :]
    half = x.shape[-1] // 2
    rotated_half = np.concatenate([-x[..., half:], x[..., :half]], axis=-1)
    return x * cos + rotated_half * sin


def silu(v):
    return v / (1 + np.exp(-v))


def sparse_moe(cfg, g, p, h, margins=None):
    """The MoE block on h (n, C); appends each token's routing margin to
    margins when given."""
    block, router, gate, up, down = MOE_NAMES[cfg["architectures"][0]]
    k = cfg["num_experts_per_tok"]
    logits = h @ g(p + f"{block}.{router}.weight").T                 # (n, E)
    ordered = np.sort(logits, axis=-1)[:, ::-1]
    if margins is not None:
        margins.extend((ordered[:, k - 1] - ordered[:, k]).tolist())
    probs = np.exp(logits - logits.max(axis=-1, keepdims=True))
    probs /= probs.sum(axis=-1, keepdims=True)
    chosen = np.argsort(-probs, axis=-1, kind="stable")[:, :k]      # (n, k)
    weights = np.take_along_axis(probs, chosen, axis=-1)
    if cfg["architectures"][0] == "MixtralForCausalLM" or cfg.get("norm_topk_prob"):
        weights /= weights.sum(axis=-1, keepdims=True)
    out = np.zeros_like(h)
    for t in range(h.shape[0]):
        for j in range(k):
            x = p + f"{block}.experts.{chosen[t, j]}."
            a = silu(h[t] @ g(x + f"{gate}.weight").T) * (h[t] @ g(x + f"{up}.weight").T)
            out[t] += weights[t, j] * (a @ g(x + f"{down}.weight").T)
    return out


def forward_full(cfg, w, tokens, margins=None):
    """Logits (n, V) for every position of one whole sequence, float64."""
    C, H, K = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    D = cfg.get("head_dim", C // H)
    eps, n = cfg["rms_norm_eps"], len(tokens)
    g = lambda name: w[name].astype(np.float64)
    freq = inv_freq(cfg, D)
    pos = np.arange(n)
    x = g("model.embed_tokens.weight")[tokens]
    mask = np.triu(np.full((n, n), -np.inf), k=1)
    for l in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{l}."
        h = rms_norm(x, g(p + "input_layernorm.weight"), eps)
        proj = lambda name: h @ g(p + f"self_attn.{name}_proj.weight").T + (
            g(p + f"self_attn.{name}_proj.bias") if p + f"self_attn.{name}_proj.bias" in w else 0)
        q, k = proj("q").reshape(n, H, D), proj("k").reshape(n, K, D)
        if p + "self_attn.q_norm.weight" in w:
            # Qwen3Attention: q_norm and k_norm on (n, heads, D), over the
            # last axis (each head alone), before the rotation.
            q = rms_norm(q, g(p + "self_attn.q_norm.weight"), eps)
            k = rms_norm(k, g(p + "self_attn.k_norm.weight"), eps)
        q, k = rotate(q, pos, freq), rotate(k, pos, freq)
        v = proj("v").reshape(n, K, D)
        k = np.repeat(k, H // K, axis=1)  # query head h uses KV head h // (H/K)
        v = np.repeat(v, H // K, axis=1)
        scores = np.einsum("qhd,khd->hqk", q, k) / math.sqrt(D) + mask
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        probs = scores / scores.sum(axis=-1, keepdims=True)
        attn = np.einsum("hqk,khd->qhd", probs, v).reshape(n, H * D)
        x = x + attn @ g(p + "self_attn.o_proj.weight").T
        h = rms_norm(x, g(p + "post_attention_layernorm.weight"), eps)
        if cfg["architectures"][0] in MOE_NAMES:
            x = x + sparse_moe(cfg, g, p, h, margins)
            continue
        gate, up = h @ g(p + "mlp.gate_proj.weight").T, h @ g(p + "mlp.up_proj.weight").T
        x = x + (gate / (1 + np.exp(-gate)) * up) @ g(p + "mlp.down_proj.weight").T
    head = g("lm_head.weight") if "lm_head.weight" in w else g("model.embed_tokens.weight")
    return rms_norm(x, g("model.norm.weight"), eps) @ head.T


def build_variant(out_dir, name, cfg, seed):
    rng = np.random.default_rng(seed)
    for draws in range(1, 21):  # a near-tie is rare (well under one draw in two)
        margins = []
        weights = make_weights(cfg, rng)
        steps = run_scenario(cfg, weights, rng, margins)
        if not margins or min(margins) > TIE_MARGIN:
            break
    else:
        sys.exit(f"{name}: every draw had a routing near-tie")
    write_checkpoint(os.path.join(out_dir, name), cfg, weights)
    with open(os.path.join(out_dir, name, "scenario.json"), "w") as f:
        json.dump({"steps": steps, "draws": draws}, f)


def run_scenario(cfg, weights, rng, margins):
    if cfg["dtype"] == "BF16":  # the reference sees exactly what the loader will
        weights = {k: bf16_round(v)[0] for k, v in weights.items()}
        narrowed = None
    elif cfg["architectures"][0] in MOE_NAMES:
        # Not checked on a bf16 backend: bf16 arithmetic moves router logits
        # by more than TIE_MARGIN, so a token's experts could differ.
        narrowed = None
    else:
        # What a bf16 backend holds after loading this f32 checkpoint: its
        # matrices rounded to bf16, norms and biases still f32.
        narrowed = {k: bf16_round(v)[0] if k.endswith(MATRIX_SUFFIXES) else v
                    for k, v in weights.items()}
    steps, history = [], {}
    for op in make_scenario(rng, cfg["vocab_size"]):
        if op[0] == "truncate":
            history[op[1]] = history[op[1]][: op[2]]
            steps.append({"truncate": op[1], "length": op[2]})
            continue
        rows, narrowed_rows = [], []
        for seq, tokens, logit_count in op[1]:
            history.setdefault(seq, [])
            history[seq] = history[seq] + tokens
            wanted = range(len(history[seq]) - logit_count, len(history[seq]))
            logits = forward_full(cfg, weights, np.array(history[seq]), margins)
            rows.extend(logits[i].tolist() for i in wanted)
            if narrowed is not None:
                logits = forward_full(cfg, narrowed, np.array(history[seq]), [])
                narrowed_rows.extend(logits[i].tolist() for i in wanted)
        step = {"sequences": [{"seq": s, "tokens": t, "logit_count": a} for s, t, a in op[1]],
                "logits": rows}
        if narrowed is not None:
            step["logits_bf16_weights"] = narrowed_rows
        steps.append(step)
    return steps


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    for i, (name, cfg) in enumerate(sorted(VARIANTS.items())):
        build_variant(sys.argv[1], name, cfg, seed=1234 + i)


if __name__ == "__main__":
    main()
