#!/usr/bin/env python3
"""Logprobs of a checkpoint's outputs, recomputed in float64 with NumPy.

Reads a Hugging Face checkpoint (config.json and one model.safetensors of
F32 or BF16 tensors), runs the independent forward pass of
llama_reference.py over each case's whole text (prompt, then the tokens the
engine generated) and scores what the engine was asked to score:

  - generated token j under the law it was sampled from: the logits at its
    position, divided by the temperature, filtered by top-k (the k largest
    logits) and top-p (the smallest most-likely-first prefix reaching top_p
    of the kept mass), ties to the lower id; temperature 0 is the plain
    log-softmax;
  - prompt token i (i >= 1) under the raw log-softmax at position i - 1;

each with its `top` most likely tokens. Shares no code with the C++ side.

Usage: logprobs_reference.py MODEL_DIR CASES_JSON OUT_JSON
  CASES_JSON: [{"prompt": [...], "tokens": [...], "temperature": t,
                "top_k": k, "top_p": p, "top": N, "prompt_logprobs": bool}, ...]
  OUT_JSON:   [{"tokens": [[logprob, [[id, logprob], ...]], ...],
                "prompt": [[logprob, [[id, logprob], ...]], ...]}, ...]
"""
import json
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from llama_reference import forward_full  # noqa: E402


def read_safetensors(path):
    with open(path, "rb") as f:
        size = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(size))
        data = f.read()
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        raw = data[begin:end]
        if info["dtype"] == "BF16":
            bits = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
            array = bits.view(np.float32)
        elif info["dtype"] == "F32":
            array = np.frombuffer(raw, dtype="<f4")
        else:
            sys.exit(f"{path}: {name} is {info['dtype']}, only F32 and BF16 are read here")
        tensors[name] = array.reshape(info["shape"])
    return tensors


def law(logits, temperature, top_k, top_p):
    """log p of every token (-inf outside the kept set), float64."""
    V = len(logits)
    t = 1.0 if temperature == 0 else temperature
    order = np.lexsort((np.arange(V), -logits))  # most likely first, ties to the lower id
    kept = V if temperature == 0 or top_k <= 0 else min(top_k, V)
    z = logits[order[:kept]] / t
    weight = np.exp(z - z[0])
    if temperature != 0 and top_p < 1:
        cum = np.cumsum(weight)
        kept = int(np.searchsorted(cum, top_p * weight.sum()) + 1)
        z, weight = z[:kept], weight[:kept]
    out = np.full(V, -np.inf)
    out[order[:kept]] = z - z[0] - np.log(weight.sum())
    return out


def score(row, token, top):
    finite = np.flatnonzero(np.isfinite(row))
    best = finite[np.lexsort((finite, -row[finite]))][:top]
    return [float(row[token]), [[int(i), float(row[i])] for i in best]]


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    model_dir, cases_path, out_path = sys.argv[1:]
    with open(os.path.join(model_dir, "config.json")) as f:
        cfg = json.load(f)
    weights = read_safetensors(os.path.join(model_dir, "model.safetensors"))
    with open(cases_path) as f:
        cases = json.load(f)
    out = []
    for case in cases:
        prompt, tokens = case["prompt"], case["tokens"]
        logits = forward_full(cfg, weights, np.array(prompt + tokens))
        P, top = len(prompt), case["top"]
        scored = {"tokens": [], "prompt": []}
        for j, token in enumerate(tokens):
            row = law(logits[P + j - 1], case["temperature"], case["top_k"], case["top_p"])
            scored["tokens"].append(score(row, token, top))
        if case["prompt_logprobs"]:
            for i in range(1, P):
                scored["prompt"].append(score(law(logits[i - 1], 1.0, 0, 1.0), prompt[i], top))
        out.append(scored)
    with open(out_path, "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
