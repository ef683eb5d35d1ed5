"""Byte-level BPE (GPT-2 style) trainer / encoder / tokenizer.json writer.

Only the Python standard library is used. Pre-tokenization follows the GPT-2
split regex

    's|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+

Python's `re` has no \\p{..} classes, so we build *explicit* character classes
from `unicodedata` (every code point whose general category starts with L or N)
and an explicit White_Space class (the Unicode White_Space property, which is
what \\s means in the Rust/Oniguruma engines; Python's own \\s additionally
matches U+001C..U+001F). The resulting pattern is exact up to differences in
Unicode database versions. `check_pretokenizer` compares it with a cheaper
approximation ([^\\W\\d_] for letters) on the corpus and reports differences.
"""
import collections
import heapq
import json
import re
import sys
import unicodedata

GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
EOT = "<|endoftext|>"

# Unicode White_Space property (what \s means in Rust regex / Oniguruma)
_WS = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"


def _class_from_pred(pred):
    ranges = []
    start = None
    for cp in range(0x110000):
        ok = pred(cp)
        if ok and start is None:
            start = cp
        elif not ok and start is not None:
            ranges.append((start, cp - 1))
            start = None
    if start is not None:
        ranges.append((start, 0x10FFFF))

    def esc(cp):
        return "\\U%08x" % cp

    return "".join(esc(a) if a == b else esc(a) + "-" + esc(b) for a, b in ranges)


def _build_exact_regex():
    cat = unicodedata.category
    L = _class_from_pred(lambda cp: cat(chr(cp))[0] == "L")
    N = _class_from_pred(lambda cp: cat(chr(cp))[0] == "N")
    S = "".join("\\U%08x" % ord(c) for c in _WS)
    pat = (r"'s|'t|'re|'ve|'m|'ll|'d"
           rf"| ?[{L}]+| ?[{N}]+| ?[^{S}{L}{N}]+|[{S}]+(?![^{S}])|[{S}]+")
    return re.compile(pat)


# Cheap approximation: letters = [^\W\d_], numbers = \d (decimal digits only)
APPROX_RE = re.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?[^\W\d_]+| ?\d+| ?(?:[^\s\w]|_)+|\s+(?!\S)|\s+""")

_EXACT_RE = None


def split_re():
    global _EXACT_RE
    if _EXACT_RE is None:
        _EXACT_RE = _build_exact_regex()
    return _EXACT_RE


def pretokenize(text):
    return split_re().findall(text)


def check_pretokenizer(texts):
    """Returns (#texts, #texts where the approximate regex differs from the exact one)."""
    r = split_re()
    n = bad = 0
    for t in texts:
        n += 1
        if r.findall(t) != APPROX_RE.findall(t):
            bad += 1
    return n, bad


def bytes_to_unicode():
    """GPT-2's reversible byte -> printable unicode char mapping."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, [chr(c) for c in cs]))


class BPE:
    """ids 0..255 = single bytes (id == byte value); merges create ids 256..;
    the special token <|endoftext|> gets the last id (vocab_size - 1)."""

    def __init__(self, token_bytes, merges):
        self.token_bytes = token_bytes  # list[bytes], index = id (without EOT)
        self.merges = merges  # list[(id_a, id_b, id_new)] in rank order
        self.ranks = {(a, b): (r, c) for r, (a, b, c) in enumerate(merges)}
        self.eot_id = len(token_bytes)
        self.vocab_size = len(token_bytes) + 1
        self._cache = {}

    # ------------------------------------------------------------------ train
    @staticmethod
    def train(word_counts, vocab_size, log=print):
        """word_counts: dict pre-token(str) -> count. vocab_size includes EOT."""
        target = vocab_size - 1  # ids excluding EOT
        token_bytes = [bytes([i]) for i in range(256)]
        bytes_to_id = {b: i for i, b in enumerate(token_bytes)}
        items = sorted(word_counts.items())  # deterministic order
        words = [list(w.encode("utf-8")) for w, _ in items]
        freqs = [c for _, c in items]
        pair_counts = collections.defaultdict(int)
        where = collections.defaultdict(set)
        for wi, w in enumerate(words):
            f = freqs[wi]
            for p in zip(w, w[1:]):
                pair_counts[p] += f
                where[p].add(wi)
        heap = [(-c, p) for p, c in pair_counts.items()]
        heapq.heapify(heap)
        merges = []
        while len(token_bytes) < target and heap:
            negc, pair = heapq.heappop(heap)
            cur = pair_counts.get(pair, 0)
            if cur <= 0:
                continue
            if -negc != cur:  # stale entry
                heapq.heappush(heap, (-cur, pair))
                continue
            a, b = pair
            nb = token_bytes[a] + token_bytes[b]
            new_id = bytes_to_id.get(nb)
            if new_id is None:
                new_id = len(token_bytes)
                token_bytes.append(nb)
                bytes_to_id[nb] = new_id
            merges.append((a, b, new_id))
            changed = set()
            for wi in sorted(where[pair]):
                w = words[wi]
                if len(w) < 2:
                    continue
                # does it contain the pair?
                out = []
                i = 0
                hit = False
                n = len(w)
                while i < n:
                    if i + 1 < n and w[i] == a and w[i + 1] == b:
                        out.append(new_id)
                        i += 2
                        hit = True
                    else:
                        out.append(w[i])
                        i += 1
                if not hit:
                    continue
                f = freqs[wi]
                for p in zip(w, w[1:]):
                    pair_counts[p] -= f
                    changed.add(p)
                for p in zip(out, out[1:]):
                    pair_counts[p] += f
                    where[p].add(wi)
                    changed.add(p)
                words[wi] = out
            del where[pair]
            pair_counts.pop(pair, None)
            for p in changed:
                c = pair_counts.get(p, 0)
                if c > 0:
                    heapq.heappush(heap, (-c, p))
                else:
                    pair_counts.pop(p, None)
            if len(merges) % 500 == 0:
                log(f"  bpe: {len(merges)} merges, vocab {len(token_bytes)}, last {nb!r} count {cur}")
        return BPE(token_bytes, merges)

    # ----------------------------------------------------------------- encode
    def encode_word(self, word):
        ids = self._cache.get(word)
        if ids is not None:
            return ids
        w = list(word.encode("utf-8"))
        ranks = self.ranks
        while len(w) > 1:
            best = None
            for p in zip(w, w[1:]):
                r = ranks.get(p)
                if r is not None and (best is None or r[0] < best[0]):
                    best = (r[0], p, r[1])
            if best is None:
                break
            _, (a, b), c = best
            out = []
            i = 0
            n = len(w)
            while i < n:
                if i + 1 < n and w[i] == a and w[i + 1] == b:
                    out.append(c)
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            w = out
        self._cache[word] = w
        return w

    def encode(self, text):
        out = []
        for piece in pretokenize(text):
            out.extend(self.encode_word(piece))
        return out

    def decode(self, ids):
        bs = b"".join(self.token_bytes[i] if i < self.eot_id else EOT.encode() for i in ids)
        return bs.decode("utf-8", errors="replace")

    # ------------------------------------------------------------------- save
    def to_hf_json(self, model_max_length=256):
        b2u = bytes_to_unicode()

        def s(i):
            return "".join(b2u[x] for x in self.token_bytes[i])

        vocab = {s(i): i for i in range(len(self.token_bytes))}
        assert len(vocab) == len(self.token_bytes), "duplicate token strings"
        vocab[EOT] = self.eot_id
        merges = [f"{s(a)} {s(b)}" for a, b, _ in self.merges]
        tok = {
            "version": "1.0",
            "truncation": None,
            "padding": None,
            "added_tokens": [{
                "id": self.eot_id, "content": EOT, "single_word": False, "lstrip": False,
                "rstrip": False, "normalized": False, "special": True}],
            "normalizer": None,
            "pre_tokenizer": {
                "type": "Sequence",
                "pretokenizers": [
                    {"type": "Split", "pattern": {"Regex": GPT2_PATTERN}, "behavior": "Isolated", "invert": False},
                    {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False},
                ],
            },
            "post_processor": None,
            "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
            "model": {
                "type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                "ignore_merges": False,
                "vocab": vocab, "merges": merges,
            },
        }
        cfg = {
            "add_bos_token": False,
            "add_eos_token": False,
            "add_prefix_space": False,
            "bos_token": EOT,
            "eos_token": EOT,
            "unk_token": EOT,
            "clean_up_tokenization_spaces": False,
            "model_max_length": model_max_length,
            "tokenizer_class": "PreTrainedTokenizerFast",
            "added_tokens_decoder": {str(self.eot_id): {
                "content": EOT, "lstrip": False, "normalized": False, "rstrip": False,
                "single_word": False, "special": True}},
        }
        return tok, cfg

    def save_state(self, path):
        with open(path, "w") as f:
            json.dump({"token_bytes": [t.hex() for t in self.token_bytes],
                       "merges": self.merges}, f)

    @staticmethod
    def load_state(path):
        with open(path) as f:
            d = json.load(f)
        return BPE([bytes.fromhex(h) for h in d["token_bytes"]], [tuple(m) for m in d["merges"]])

    @staticmethod
    def from_hf_json(path):
        """Load a tokenizer.json written by to_hf_json (byte ids == byte values)."""
        with open(path) as f:
            d = json.load(f)
        u2b = {v: k for k, v in bytes_to_unicode().items()}
        vocab = d["model"]["vocab"]
        n = max(vocab.values())  # EOT is last
        token_bytes = [None] * n
        for s, i in vocab.items():
            if i < n:
                token_bytes[i] = bytes(u2b[ch] for ch in s)
        merges = []
        for m in d["model"]["merges"]:
            a, b = m.split(" ")
            merges.append((vocab[a], vocab[b], vocab[a + b]))
        return BPE(token_bytes, merges)
