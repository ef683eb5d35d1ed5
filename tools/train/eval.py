"""Evaluate the shipped checkpoints (models/tiny/{target,draft}/model.safetensors,
read back from disk: BF16 weights upcast to float32, all arithmetic in float32).

Writes models/tiny/eval_reference.json (the numbers the C++ side must
reproduce) and models/tiny/eval_full.json (README numbers: full held-out
loss / perplexity, alpha table incl. unigram / bigram baselines, samples).

Reference definition (eval_reference.json):
  * held-out token stream H = .cache/heldout.npy (see prep.py); if the corpus
    cache is absent, the windows stored in an existing eval_reference.json
    are used instead.
  * windows: W = 32 windows of N = 128 tokens, window i = H[i*S : i*S+N] with
    S = len(H) // 32. Each window is run independently from position 0, no
    BOS token is prepended, causal attention, positions 0..N-1.
  * target_mean_ce: mean over all 32*127 (window, t) pairs, t = 0..126, of
    -log softmax(target_logits[t])[window[t+1]] (natural log).
  * alpha_T0: mean over all 32*128 (window, t) pairs, t = 0..127, of
    [argmax target_logits[t] == argmax draft_logits[t]] (first index on ties).
  * alpha_T1: mean over the same 32*128 positions of
    sum_x min(softmax(target_logits[t])[x], softmax(draft_logits[t])[x]).
"""
import argparse
import json
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import st_io  # noqa: E402
import bpe  # noqa: E402

REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
TINY_DEFAULT = os.path.join(REPO, "models", "tiny")
CACHE = os.path.join(HERE, ".cache")

N_WIN, WIN = 32, 128

PROMPTS = [
    "The president of the United States",
    "In the morning, the children",
    "It was a dark and stormy night",
    "The history of the city",
    "She looked at him and said",
    "Scientists have found that",
]


def ref_windows(held):
    s = len(held) // N_WIN
    return [held[i * s:i * s + WIN].tolist() for i in range(N_WIN)]


@torch.no_grad()
def logits_of(model, windows, bs=8):
    out = []
    x = torch.tensor(windows, dtype=torch.long)
    for j in range(0, len(x), bs):
        out.append(model(x[j:j + bs]).float())
    return torch.cat(out)  # [W, N, V]


def ce_of(logits, windows):
    x = torch.tensor(windows, dtype=torch.long)
    lp = F.log_softmax(logits[:, :-1], dim=-1)
    nll = -lp.gather(-1, x[:, 1:, None])[..., 0]
    return nll.double().mean().item(), nll.numel()


def alphas(lp_logits, lq_logits):
    """(alpha_T0, alpha_T1) over all positions. lp = target, lq = draft."""
    p_arg = lp_logits.argmax(-1)
    q_arg = lq_logits.argmax(-1)
    a0 = (p_arg == q_arg).double().mean().item()
    p = F.softmax(lp_logits, dim=-1)
    q = F.softmax(lq_logits, dim=-1)
    a1 = torch.minimum(p, q).sum(-1).double().mean().item()
    return a0, a1


def alpha_vs_table(lp_logits, q_rows_T0, q_rows_T1):
    """alpha against a non-neural approximation given per-position argmax ids
    (T=0) and distributions (T=1)."""
    p_arg = lp_logits.argmax(-1)
    a0 = (p_arg == q_rows_T0).double().mean().item()
    p = F.softmax(lp_logits, dim=-1)
    a1 = torch.minimum(p, q_rows_T1).sum(-1).double().mean().item()
    return a0, a1


@torch.no_grad()
def greedy(model, tok, prompt, n=40):
    ids = tok.encode(prompt)
    for _ in range(n):
        lg = model(torch.tensor([ids[-256:]]))[0, -1]
        nxt = int(lg.argmax())
        if nxt == tok.eot_id:
            break
        ids.append(nxt)
    return tok.decode(ids)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reference_only", action="store_true", help="only recompute eval_reference.json")
    ap.add_argument("--check", action="store_true", help="compare against the existing eval_reference.json instead of writing it")
    ap.add_argument("--models_dir", default=TINY_DEFAULT, help="directory holding target/ and draft/ (default models/tiny)")
    args = ap.parse_args()
    tiny = args.models_dir
    torch.set_num_threads(1)
    torch.manual_seed(0)
    t0 = time.time()
    target = st_io.load_hf_model(os.path.join(tiny, "target")).eval()
    draft = st_io.load_hf_model(os.path.join(tiny, "draft")).eval()
    n_t = sum(p.numel() for p in target.parameters())
    n_d = sum(p.numel() for p in draft.parameters())

    ref_path = os.path.join(tiny, "eval_reference.json")
    held_path = os.path.join(CACHE, "heldout.npy")
    old = None
    if os.path.exists(ref_path):
        with open(ref_path) as f:
            old = json.load(f)
    if os.path.exists(held_path):
        held = np.load(held_path).astype(np.int64)
        windows = ref_windows(held)
        if old is not None:
            assert old["windows"] == windows, "held-out windows differ from eval_reference.json"
    else:
        assert old is not None, "need tools/train/.cache/heldout.npy (run prep.py) or an existing eval_reference.json"
        held = None
        windows = old["windows"]

    lt = logits_of(target, windows)
    ld = logits_of(draft, windows)
    ce_t, n_ce = ce_of(lt, windows)
    ce_d, _ = ce_of(ld, windows)
    a0, a1 = alphas(lt, ld)
    ref = {
        "description": (
            "Reference numbers for models/tiny (target, draft) computed by tools/train/eval.py in float32 "
            "from the BF16 weights stored in model.safetensors. windows: 32 held-out windows of 128 token ids "
            "(window i = heldout[i*S:i*S+128], S=len(heldout)//32). Each window is run independently from "
            "position 0 with no BOS prepended. target_mean_ce: natural-log cross-entropy of the target, mean "
            "over the 32*127 predictions of token t+1 from tokens 0..t (t=0..126). draft_mean_ce: same for the "
            "draft. alpha_T0: fraction of the 32*128 positions (t=0..127) where argmax target logits == argmax "
            "draft logits (first index on ties). alpha_T1: mean over the same 32*128 positions of "
            "sum_x min(softmax(target)[x], softmax(draft)[x]). Tolerances for reimplementations: CE within 1% "
            "relative, alphas within 0.01 absolute."),
        "target": "models/tiny/target", "draft": "models/tiny/draft",
        "num_windows": N_WIN, "window_len": WIN, "bos_prepended": False,
        "num_ce_predictions": n_ce, "num_alpha_positions": N_WIN * WIN,
        "target_mean_ce": ce_t, "target_ppl": math.exp(ce_t),
        "draft_mean_ce": ce_d, "draft_ppl": math.exp(ce_d),
        "alpha_T0": a0, "alpha_T1": a1,
        "debug_logits": {
            "note": "float32 logits of window 0 at positions 0, 1 and 127: argmax id and logits[0:8]",
            "target": {str(t): {"argmax": int(lt[0, t].argmax()), "logits_0_8": [round(float(v), 5) for v in lt[0, t, :8]]}
                       for t in (0, 1, WIN - 1)},
            "draft": {str(t): {"argmax": int(ld[0, t].argmax()), "logits_0_8": [round(float(v), 5) for v in ld[0, t, :8]]}
                      for t in (0, 1, WIN - 1)},
        },
        "windows": windows,
    }
    print(f"reference: target CE {ce_t:.4f} (ppl {math.exp(ce_t):.2f}), draft CE {ce_d:.4f}, "
          f"alpha T0 {a0:.4f}, T1 {a1:.4f}  [{time.time() - t0:.1f}s]", flush=True)
    if args.check:
        assert old is not None
        for k in ("target_mean_ce", "draft_mean_ce", "alpha_T0", "alpha_T1"):
            print(f"  {k}: stored {old[k]:.6f} recomputed {ref[k]:.6f}")
            assert abs(old[k] - ref[k]) <= 1e-4 * max(1.0, abs(old[k])), k
        print("check OK")
        return
    with open(ref_path, "w") as f:
        json.dump({k: v for k, v in ref.items() if k != "windows"}, f, indent=2)
    # write windows compactly, one window per line
    with open(ref_path) as f:
        head = f.read().rstrip()[:-1].rstrip()
    with open(ref_path, "w") as f:
        f.write(head + ',\n  "windows": [\n')
        f.write(",\n".join("    " + json.dumps(w) for w in windows))
        f.write("\n  ]\n}\n")
    with open(ref_path) as f:
        assert json.load(f)["windows"] == windows
    if args.reference_only or held is None:
        return

    # ---------------------------------------------------------- full held-out
    nwin = len(held) // WIN
    full = [held[i * WIN:(i + 1) * WIN].tolist() for i in range(nwin)]
    tot = {"t_nll": 0.0, "d_nll": 0.0, "n": 0, "a0": 0.0, "a1": 0.0, "pos": 0,
           "uni0": 0.0, "uni1": 0.0, "bi0": 0.0, "bi1": 0.0}
    train = np.load(os.path.join(CACHE, "train.npy")).astype(np.int64)
    V = 4096
    uni = np.bincount(train, minlength=V).astype(np.float64) + 1.0
    uni /= uni.sum()
    big = np.zeros((V, V), dtype=np.float64)
    np.add.at(big, (train[:-1], train[1:]), 1.0)
    # bigram q(x|a) = (c(a,x) + pu(x)) / (c(a) + 1)  (Dirichlet prior = unigram, strength 1)
    big_T1 = (big + uni[None, :]) / (big.sum(1, keepdims=True) + 1.0)
    big_T0 = big_T1.argmax(1)
    uni_t = torch.from_numpy(uni).float()
    uni_arg = int(np.argmax(uni))
    big_T1_t = torch.from_numpy(big_T1).float()
    big_T0_t = torch.from_numpy(big_T0)
    for j in range(0, nwin, 16):
        w = full[j:j + 16]
        x = torch.tensor(w)
        lt = logits_of(target, w)
        ld = logits_of(draft, w)
        c, n = ce_of(lt, w)
        tot["t_nll"] += c * n
        c, n = ce_of(ld, w)
        tot["d_nll"] += c * n
        tot["n"] += n
        npos = lt.shape[0] * lt.shape[1]
        a0, a1 = alphas(lt, ld)
        tot["a0"] += a0 * npos
        tot["a1"] += a1 * npos
        u0, u1 = alpha_vs_table(lt, torch.full(lt.shape[:2], uni_arg), uni_t.expand_as(lt))
        tot["uni0"] += u0 * npos
        tot["uni1"] += u1 * npos
        b0, b1 = alpha_vs_table(lt, big_T0_t[x], big_T1_t[x])
        tot["bi0"] += b0 * npos
        tot["bi1"] += b1 * npos
        tot["pos"] += npos
    P = tot["pos"]
    res = {
        "heldout_tokens": int(len(held)), "windows": nwin, "window_len": WIN,
        "params": {"target": n_t, "draft": n_d},
        "target_ce": tot["t_nll"] / tot["n"], "draft_ce": tot["d_nll"] / tot["n"],
        "unigram_ce": float(-np.log(uni[held]).mean()),
        "alpha": {"draft": {"T0": tot["a0"] / P, "T1": tot["a1"] / P},
                  "unigram": {"T0": tot["uni0"] / P, "T1": tot["uni1"] / P},
                  "bigram": {"T0": tot["bi0"] / P, "T1": tot["bi1"] / P}},
    }
    res["target_ppl"] = math.exp(res["target_ce"])
    res["draft_ppl"] = math.exp(res["draft_ce"])
    res["unigram_ppl"] = math.exp(res["unigram_ce"])
    tok = bpe.BPE.from_hf_json(os.path.join(tiny, "target", "tokenizer.json"))
    res["samples_target_greedy"] = {p: greedy(target, tok, p) for p in PROMPTS}
    res["samples_draft_greedy"] = {p: greedy(draft, tok, p) for p in PROMPTS[:3]}
    # relative cost of one forward pass (CPU, float32, 1x128 tokens)
    x = torch.tensor([full[0]])
    times = {}
    for name, m in (("target", target), ("draft", draft)):
        with torch.no_grad():
            m(x)
            t1 = time.time()
            for _ in range(5):
                m(x)
            times[name] = (time.time() - t1) / 5
    res["cpu_fwd_seconds_1x128"] = times
    res["eval_seconds"] = time.time() - t0
    with open(os.path.join(tiny, "eval_full.json"), "w") as f:
        json.dump(res, f, indent=2)
    print(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
