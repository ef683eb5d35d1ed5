"""Hand-written safetensors I/O (BF16 / F32) and Hugging Face directory
export/import for the tiny Llama models. No third-party packages."""
import json
import os
import shutil
import struct
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from model import LlamaConfig, LlamaForCausalLM  # noqa: E402

BOS_EOS_ID = 4095  # <|endoftext|>


def write_safetensors(path, tensors, metadata=None):
    """tensors: dict name -> torch tensor (bfloat16 or float32). Layout:
    u64 little-endian header length, JSON header (space padded to 8 bytes),
    raw little-endian data in header order."""
    header = {}
    if metadata:
        header["__metadata__"] = metadata
    blobs = []
    off = 0
    for name in sorted(tensors):
        t = tensors[name].contiguous()
        if t.dtype == torch.bfloat16:
            raw = t.view(torch.int16).numpy().astype("<i2").tobytes()
            dt = "BF16"
        elif t.dtype == torch.float32:
            raw = t.numpy().astype("<f4").tobytes()
            dt = "F32"
        else:
            raise ValueError(t.dtype)
        header[name] = {"dtype": dt, "shape": list(t.shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    h = json.dumps(header, separators=(",", ":")).encode("utf-8")
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def read_safetensors(path):
    """Returns dict name -> torch tensor in the stored dtype."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        a, b = info["data_offsets"]
        buf = data[base + a:base + b]
        if info["dtype"] == "BF16":
            arr = np.frombuffer(buf, dtype="<i2").copy()
            t = torch.from_numpy(arr).view(torch.bfloat16)
        elif info["dtype"] == "F32":
            t = torch.from_numpy(np.frombuffer(buf, dtype="<f4").copy())
        else:
            raise ValueError(info["dtype"])
        out[name] = t.reshape(info["shape"])
    return out


def hf_config(cfg: LlamaConfig):
    return {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": cfg.hidden_size,
        "intermediate_size": cfg.intermediate_size,
        "num_hidden_layers": cfg.num_hidden_layers,
        "num_attention_heads": cfg.num_attention_heads,
        "num_key_value_heads": cfg.num_key_value_heads,
        "head_dim": cfg.head_dim,
        "hidden_act": "silu",
        "rms_norm_eps": cfg.rms_norm_eps,
        "rope_theta": cfg.rope_theta,
        "rope_scaling": None,
        "max_position_embeddings": cfg.max_position_embeddings,
        "vocab_size": cfg.vocab_size,
        "tie_word_embeddings": False,
        "attention_bias": False,
        "mlp_bias": False,
        "bos_token_id": BOS_EOS_ID,
        "eos_token_id": BOS_EOS_ID,
        "initializer_range": 0.02,
        "torch_dtype": "bfloat16",
    }


def export_hf(model: LlamaForCausalLM, out_dir, tokenizer_dir):
    os.makedirs(out_dir, exist_ok=True)
    sd = {k: v.detach().to(torch.bfloat16) for k, v in model.state_dict().items()}
    write_safetensors(os.path.join(out_dir, "model.safetensors"), sd, {"format": "pt"})
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(hf_config(model.cfg), f, indent=2)
        f.write("\n")
    for fn in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copyfile(os.path.join(tokenizer_dir, fn), os.path.join(out_dir, fn))


def load_hf_model(d):
    """Load an exported dir; weights are bf16 in the file, upcast to float32."""
    with open(os.path.join(d, "config.json")) as f:
        c = json.load(f)
    cfg = LlamaConfig(vocab_size=c["vocab_size"], hidden_size=c["hidden_size"],
                      intermediate_size=c["intermediate_size"], num_hidden_layers=c["num_hidden_layers"],
                      num_attention_heads=c["num_attention_heads"], num_key_value_heads=c["num_key_value_heads"],
                      head_dim=c["head_dim"], rms_norm_eps=c["rms_norm_eps"], rope_theta=c["rope_theta"],
                      max_position_embeddings=c["max_position_embeddings"])
    m = LlamaForCausalLM(cfg)
    sd = read_safetensors(os.path.join(d, "model.safetensors"))
    m.load_state_dict({k: v.float() for k, v in sd.items()}, strict=True)
    return m
