"""Export a training checkpoint (.cache/{target,draft}.pt) to a Hugging Face
style directory models/tiny/{target,draft}/ (BF16 safetensors, config.json,
tokenizer.json, tokenizer_config.json).

  export.py target [--ckpt PATH] [--out DIR]
"""
import argparse
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from model import LlamaConfig, LlamaForCausalLM  # noqa: E402
import st_io  # noqa: E402

REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
CACHE = os.path.join(HERE, ".cache")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("which", choices=["target", "draft"])
    ap.add_argument("--ckpt", default=None)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    ckpt = args.ckpt or os.path.join(CACHE, f"{args.which}.pt")
    out = args.out or os.path.join(REPO, "models", "tiny", args.which)
    ck = torch.load(ckpt)
    cfg = LlamaConfig(**ck["config"])
    m = LlamaForCausalLM(cfg)
    m.load_state_dict(ck["model"])
    st_io.export_hf(m, out, CACHE)
    # round-trip check: file == bf16(rounded) weights
    m2 = st_io.load_hf_model(out)
    for (k, v), (k2, v2) in zip(m.state_dict().items(), m2.state_dict().items()):
        assert k == k2 and torch.equal(v.to(torch.bfloat16).float(), v2), k
    size = os.path.getsize(os.path.join(out, "model.safetensors"))
    print(f"exported {args.which} step {ck['step']}/{ck['args']['steps']} "
          f"({m.num_params()} params, {size} bytes) -> {out}")


if __name__ == "__main__":
    main()
