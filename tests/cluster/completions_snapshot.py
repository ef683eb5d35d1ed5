#!/usr/bin/env python3
"""Sends a fixed set of completion requests to a running tandem server, 8 at
a time, and prints one JSON line per request: its name, text and finish
reason. Greedy requests use gamma auto (penalized ones a fixed gamma); sampled ones a fixed gamma, because
with auto the drafted blocks (and so the seeded draws) depend on timing.
Run by run_cluster_outputs.sh, which compares the output of one process
with that of MPI jobs, and by the multihost tests, which may ask a server on
another host.  usage: completions_snapshot.py PORT [HOST (127.0.0.1)]"""
import json
import sys
import urllib.request
from concurrent.futures import ThreadPoolExecutor

PROMPTS = ["The history of the city", "In the morning the", "She said that",
           "The results of the experiment", "Once upon a time"]


def requests():
    for i, prompt in enumerate(PROMPTS):
        for drafter in ("model", "ngram", "none"):
            yield f"greedy-{i}-{drafter}", {"prompt": prompt, "max_tokens": 40, "temperature": 0,
                                            "ignore_eos": True,
                                            "speculation": {"drafter": drafter}}
        yield f"sampled-{i}", {"prompt": prompt, "max_tokens": 40, "temperature": 0.8,
                               "top_p": 0.95, "seed": 1000 + i, "speculation": {"gamma": 4}}
        yield f"sampled-topk-{i}", {"prompt": prompt, "max_tokens": 24, "temperature": 1.0,
                                    "top_k": 20, "seed": 7, "speculation": {"gamma": 3}}
        if i < 3:  # logit processing: it travels to the draft rank and target rank 0
            yield f"penalized-greedy-{i}", {
                "prompt": prompt, "max_tokens": 40, "temperature": 0, "presence_penalty": 0.8,
                "frequency_penalty": 0.5, "repetition_penalty": 1.3, "min_tokens": 8,
                "logit_bias": {"17": 3, "42": -100}, "speculation": {"gamma": 4}}
            yield f"penalized-sampled-{i}", {
                "prompt": prompt, "max_tokens": 32, "temperature": 0.9, "min_p": 0.05,
                "presence_penalty": -0.5, "frequency_penalty": 1.0, "repetition_penalty": 1.2,
                "logit_bias": {"99": 2}, "seed": 300 + i, "speculation": {"gamma": 4}}


def complete(host, port, body):
    body = dict(body, model="tandem")
    request = urllib.request.Request(f"http://{host}:{port}/v1/completions",
                                     data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=300) as response:
        return json.load(response)


def main():
    port = int(sys.argv[1])
    host = sys.argv[2] if len(sys.argv) > 2 else "127.0.0.1"
    named = list(requests())
    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(lambda item: complete(host, port, item[1]), named))
    for (name, _), answer in zip(named, answers):
        choice = answer["choices"][0]
        print(json.dumps({"name": name, "text": choice["text"],
                          "finish_reason": choice["finish_reason"]}))


if __name__ == "__main__":
    main()
