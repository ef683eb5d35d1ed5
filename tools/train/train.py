"""Train the target model (plain LM) or the draft model (distillation from the
shipped, bf16-rounded target).

  train.py target --steps N           -> .cache/target.pt (periodic checkpoints)
  train.py draft  --steps N --teacher models/tiny/target -> .cache/draft.pt

Deterministic: fixed seeds, batch offsets drawn from a generator seeded by
(seed, step) (so a resumed run sees the same data), a fixed thread count (1),
torch.use_deterministic_algorithms(True). Compute uses bf16 autocast on CPU
with float32 master weights and float32 AdamW state.
"""
import argparse
import json
import math
import os
import signal
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from model import LlamaForCausalLM, TARGET_CONFIG, DRAFT_CONFIG  # noqa: E402
import st_io  # noqa: E402

CACHE = os.path.join(HERE, ".cache")


def setup_determinism(seed, threads):
    # 1 thread by default: on the shared 2-core machine (parallel C++ builds)
    # 2 OpenMP threads burned ~4x more CPU per step (barrier spinning while
    # the other thread was descheduled). The thread count is part of the
    # determinism contract: keep it fixed when reproducing.
    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    np.random.seed(seed)
    torch.use_deterministic_algorithms(True)


def get_batch(data, step, seed, batch, seq):
    """Random windows of seq+1 tokens; offsets depend only on (seed, step)."""
    g = torch.Generator()
    g.manual_seed(seed * 1_000_003 + step)
    ix = torch.randint(0, len(data) - seq - 1, (batch,), generator=g)
    x = torch.stack([data[i:i + seq + 1] for i in ix.tolist()])
    return x[:, :-1].long(), x[:, 1:].long()


def batch_shape(step, args):
    # every 8th step uses 256-token windows (same token count) so all 256
    # positions of the context are trained
    if step % 8 == 7:
        return args.batch // 2, args.seq * 2
    return args.batch, args.seq


def lr_at(step, args):
    """Warmup-stable-decay: linear warmup over `warmup` steps, constant peak LR
    until `decay_start`, then a cosine decay to min_lr_frac*lr at `steps`.
    (decay_start defaults to warmup, i.e. a plain warmup+cosine schedule.)
    During the stable phase the LR does not depend on decay_start/steps, so a
    run can be extended and its decay start chosen later: resuming the stable
    phase from a checkpoint is bit-identical to a fresh run with the final
    arguments."""
    if step < args.warmup:
        return args.lr * (step + 1) / args.warmup
    ds = getattr(args, "decay_start", None)
    ds = args.warmup if ds is None else ds
    if step < ds:
        return args.lr
    t = (step - ds) / max(1, args.steps - ds)
    return args.lr * (args.min_lr_frac + (1 - args.min_lr_frac) * 0.5 * (1 + math.cos(math.pi * min(1.0, t))))


@torch.no_grad()
def heldout_loss(model, held, n_windows=64, seq=128):
    model.eval()
    stride = (len(held) - seq - 1) // n_windows
    xs = torch.stack([held[i * stride:i * stride + seq + 1] for i in range(n_windows)]).long()
    tot = 0.0
    for j in range(0, n_windows, 16):
        x = xs[j:j + 16]
        with torch.autocast("cpu", dtype=torch.bfloat16):
            lg = model(x[:, :-1])
        tot += F.cross_entropy(lg.float().reshape(-1, lg.shape[-1]), x[:, 1:].reshape(-1), reduction="sum").item()
    model.train()
    return tot / (n_windows * seq)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("which", choices=["target", "draft"])
    ap.add_argument("--steps", type=int, required=True)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--lr", type=float, default=None)
    ap.add_argument("--min_lr_frac", type=float, default=0.1)
    ap.add_argument("--decay_start", type=int, default=None, help="end of the constant-LR phase (default: warmup)")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--wd", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--ckpt_every", type=int, default=50)
    ap.add_argument("--eval_every", type=int, default=250)
    ap.add_argument("--log_every", type=int, default=10)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--teacher", default=None, help="HF dir of the target (draft distillation)")
    ap.add_argument("--kl_weight", type=float, default=0.8)
    ap.add_argument("--ce_weight", type=float, default=0.2)
    ap.add_argument("--max_steps_this_run", type=int, default=None, help="stop early (for throughput tests)")
    args = ap.parse_args()
    if args.seed is None:
        args.seed = 1234 if args.which == "target" else 5678
    if args.lr is None:
        args.lr = 1.5e-3 if args.which == "target" else 3e-3
    setup_determinism(args.seed, args.threads)

    train = torch.from_numpy(np.load(os.path.join(CACHE, "train.npy")).astype(np.int32))
    held = torch.from_numpy(np.load(os.path.join(CACHE, "heldout.npy")).astype(np.int32))

    cfg = TARGET_CONFIG if args.which == "target" else DRAFT_CONFIG
    model = LlamaForCausalLM(cfg)
    print(f"{args.which}: {model.num_params()} params; args {vars(args)}", flush=True)
    teacher = None
    if args.which == "draft":
        assert args.teacher, "--teacher required for draft"
        teacher = st_io.load_hf_model(args.teacher)  # bf16-rounded weights, as shipped
        teacher.eval()
        for p in teacher.parameters():
            p.requires_grad_(False)

    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": args.wd},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95), eps=1e-8)

    ckpt_path = os.path.join(CACHE, f"{args.which}.pt")
    log_path = os.path.join(CACHE, f"{args.which}_log.jsonl")
    start = 0
    elapsed_prev = 0.0
    if os.path.exists(ckpt_path):
        ck = torch.load(ckpt_path)
        same = all(ck["args"].get(k) == getattr(args, k) for k in ("seed", "lr", "warmup", "batch", "seq", "wd", "teacher", "threads"))
        # a checkpoint is reusable if every step it has done used the same LR
        ok_sched = all(lr_at(i, argparse.Namespace(**ck["args"])) == lr_at(i, args) for i in range(ck["step"]))
        if same and ok_sched:
            model.load_state_dict(ck["model"])
            opt.load_state_dict(ck["opt"])
            start = ck["step"]
            elapsed_prev = ck.get("elapsed", 0.0)
            print(f"resumed from step {start}", flush=True)
        else:
            sys.exit(f"{ckpt_path} exists but is not compatible with these arguments; delete it to start over")
    if start == 0 and os.path.exists(log_path):
        os.remove(log_path)

    def save(step, elapsed):
        tmp = ckpt_path + ".tmp"
        torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step,
                    "args": vars(args), "elapsed": elapsed, "config": cfg.to_dict()}, tmp)
        os.replace(tmp, ckpt_path)

    # SIGUSR1: finish the current step, write a checkpoint, exit (used to end
    # the constant-LR phase at a step chosen from the measured throughput)
    stop_flag = []
    signal.signal(signal.SIGUSR1, lambda *a: stop_flag.append(1))

    model.train()
    t0 = time.time()
    tok_seen = 0
    last_loss = None
    stop_at = args.steps if args.max_steps_this_run is None else min(args.steps, start + args.max_steps_this_run)
    for step in range(start, stop_at):
        b, s = batch_shape(step, args)
        x, y = get_batch(train, step, args.seed, b, s)
        lr = lr_at(step, args)
        for g in opt.param_groups:
            g["lr"] = lr
        with torch.autocast("cpu", dtype=torch.bfloat16):
            logits = model(x)
        logits = logits.float().reshape(-1, cfg.vocab_size)
        ce = F.cross_entropy(logits, y.reshape(-1))
        if teacher is not None:
            with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
                tlog = teacher(x)
            tlogp = F.log_softmax(tlog.float().reshape(-1, cfg.vocab_size), dim=-1)
            slogp = F.log_softmax(logits, dim=-1)
            kl = (tlogp.exp() * (tlogp - slogp)).sum(-1).mean()  # KL(target || draft)
            loss = args.kl_weight * kl + args.ce_weight * ce
        else:
            kl = None
            loss = ce
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        tok_seen += b * s
        last_loss = ce.item()
        done = step + 1
        if done % args.log_every == 0 or done == stop_at:
            el = time.time() - t0
            rec = {"step": done, "lr": lr, "ce": round(last_loss, 4),
                   "kl": None if kl is None else round(kl.item(), 4),
                   "sec": round(el + elapsed_prev, 1), "tok_per_s": round(tok_seen / el, 1)}
            if done % args.eval_every == 0 or done == args.steps:
                rec["heldout_ce"] = round(heldout_loss(model, held), 4)
            print(json.dumps(rec), flush=True)
            with open(log_path, "a") as f:
                f.write(json.dumps(rec) + "\n")
        if done % args.ckpt_every == 0 or done == stop_at or stop_flag:
            save(done, time.time() - t0 + elapsed_prev)
        if stop_flag:
            print(f"SIGUSR1: checkpoint written at step {done}, exiting", flush=True)
            break
    print(f"finished {stop_at}/{args.steps} steps in {time.time() - t0:.1f}s", flush=True)


if __name__ == "__main__":
    main()
