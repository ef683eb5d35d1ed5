#!/usr/bin/env python3
"""Workloads whose prompts share prefixes, for measuring prefix caching.

Writes JSONL conversations for `tandem-loadtest --endpoint chat
--conversations FILE` (tools/loadtest/README.md, "Chat") to stdout:

  chat           multi-turn conversations of --turns LO,HI user turns each
                 (default 4,8): every turn resends the whole history, so all
                 but its newest message is a prefix the server has seen.
  system-prompt  single-turn requests that all open with the same long system
                 prompt (--system-words words: 540, ~1,000 tokens of the tiny
                 tokenizer, which cuts this corpus into ~1.8 tokens a word)
                 before a short, varied user question.

Every message is a run of consecutive words cut from a corpus (one
{"text": ...} per line; tools/loadtest/heldout.jsonl by default) at seeded
random places, so the same --seed gives the same file and a different seed
gives different prompts (a fresh, uncached prefix). Each line carries
max_tokens, so every turn asks for the same number of tokens.

usage: prefix_workloads.py chat --conversations N [--turns 4,8] [--max-tokens 32]
           [--user-words 16,48] [--reply-words 16,40] [--seed 1] [--corpus FILE]
       prefix_workloads.py system-prompt --requests N [--system-words 540]
           [--question-words 8,24] [--max-tokens 32] [--seed 1] [--corpus FILE]
"""
import argparse
import json
import os
import random
import sys

DEFAULT_CORPUS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "heldout.jsonl")


def read_words(path):
    """Every word of the corpus, in order, documents run together."""
    words = []
    with open(path, encoding="utf-8") as corpus:
        for number, line in enumerate(corpus, 1):
            if not line.strip():
                continue
            try:
                words.extend(json.loads(line)["text"].split())
            except (ValueError, KeyError, TypeError) as error:
                sys.exit(f"{path}:{number}: not a {{\"text\": ...}} line ({error})")
    if not words:
        sys.exit(f"{path}: no words")
    return words


def word_range(text, flag):
    """'LO,HI' -> (LO, HI) with 1 <= LO <= HI; a bad value names its flag."""
    try:
        low, high = (int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{flag} must be LO,HI (two whole numbers), got {text!r}")
    if not 1 <= low <= high:
        raise argparse.ArgumentTypeError(f"{flag} must have 1 <= LO <= HI, got {text!r}")
    return low, high


def positive(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


class Cutter:
    """Runs of consecutive corpus words at seeded random places."""

    def __init__(self, words, seed):
        self.words = words
        self.rng = random.Random(seed)

    def text(self, count):
        start = self.rng.randrange(len(self.words))
        return " ".join(self.words[(start + i) % len(self.words)] for i in range(count))

    def text_in(self, bounds):
        return self.text(self.rng.randint(*bounds))


def chat_conversations(cut, args):
    for _ in range(args.conversations):
        messages = []
        turns = cut.rng.randint(*args.turns)
        for turn in range(turns):
            messages.append({"role": "user", "content": cut.text_in(args.user_words)})
            if turn + 1 < turns:  # the recorded reply (--history recorded sends it)
                messages.append({"role": "assistant", "content": cut.text_in(args.reply_words)})
        yield {"messages": messages, "max_tokens": args.max_tokens}


def system_prompt_requests(cut, args):
    system = cut.text(args.system_words)
    for _ in range(args.requests):
        question = cut.text_in(args.question_words)
        yield {"messages": [{"role": "system", "content": system},
                            {"role": "user", "content": question + "?"}],
               "max_tokens": args.max_tokens}


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    kinds = parser.add_subparsers(dest="kind", required=True)
    chat = kinds.add_parser("chat", help="multi-turn conversations")
    chat.add_argument("--conversations", type=positive, required=True)
    chat.add_argument("--turns", type=lambda t: word_range(t, "--turns"), default=(4, 8))
    chat.add_argument("--user-words", type=lambda t: word_range(t, "--user-words"), default=(16, 48))
    chat.add_argument("--reply-words", type=lambda t: word_range(t, "--reply-words"), default=(16, 40))
    shared = kinds.add_parser("system-prompt", help="one long system prompt, short questions")
    shared.add_argument("--requests", type=positive, required=True)
    shared.add_argument("--system-words", type=positive, default=540)
    shared.add_argument("--question-words", type=lambda t: word_range(t, "--question-words"),
                        default=(8, 24))
    for sub in (chat, shared):
        sub.add_argument("--max-tokens", type=positive, default=32)
        sub.add_argument("--seed", type=int, default=1)
        sub.add_argument("--corpus", default=DEFAULT_CORPUS)
    return parser.parse_args(argv)


def main(argv):
    args = parse_args(argv)
    cut = Cutter(read_words(args.corpus), args.seed)
    lines = chat_conversations(cut, args) if args.kind == "chat" else system_prompt_requests(cut, args)
    for line in lines:
        sys.stdout.write(json.dumps(line) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
