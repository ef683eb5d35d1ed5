#!/usr/bin/env python3
"""Requests in flight through a fault: starts one streamed and one plain
completion (long, greedy, no drafting, so that they outlast the fault),
waits until the stream has given a few tokens, runs the fault command,
then waits for both to end and prints one JSON object: the text the same
request gave before the fault (the reference), and for each request how
it ended, its text and how many seconds after the fault it ended. Used by the multihost fault tests (run inside the host that
serves, so the server is at 127.0.0.1).

usage: fault_client.py PORT WAIT_SECONDS FAULT_COMMAND...
WAIT_SECONDS bounds the wait after the fault; a request still open then
is reported as "open" (the test fails it: something hung)."""
import http.client
import json
import subprocess
import sys
import threading
import time

port = int(sys.argv[1])
wait_seconds = float(sys.argv[2])
fault_command = sys.argv[3:]

BODY = {"model": "tandem", "prompt": "The history of the city", "max_tokens": 200,
        "temperature": 0, "ignore_eos": True, "speculation": {"drafter": "none"}}

results = {}
stream_started = threading.Event()


def connection():
    return http.client.HTTPConnection("127.0.0.1", port, timeout=wait_seconds + 60)


def plain():
    result = {"kind": "plain"}
    try:
        c = connection()
        c.request("POST", "/v1/completions", json.dumps(BODY), {"Content-Type": "application/json"})
        response = c.getresponse()
        result["status"] = response.status
        result["body"] = response.read().decode(errors="replace")
        result["outcome"] = "answered"
        if response.status == 200:
            result["text"] = json.loads(result["body"])["choices"][0]["text"]
    except Exception as error:  # a connection closed unanswered is an outcome too
        result["outcome"] = "closed"
        result["why"] = repr(error)
    result["ended"] = time.time()
    results["plain"] = result


def stream():
    result = {"kind": "stream", "tokens": 0, "done": False, "error": None, "text": ""}
    try:
        c = connection()
        c.request("POST", "/v1/completions", json.dumps(dict(BODY, stream=True)),
                  {"Content-Type": "application/json"})
        response = c.getresponse()
        result["status"] = response.status
        for raw in response:
            line = raw.decode(errors="replace").strip()
            if not line.startswith("data: "):
                continue
            data = line[len("data: "):]
            if data == "[DONE]":
                result["done"] = True
                break
            event = json.loads(data)
            if "error" in event:
                result["error"] = event["error"]
            else:
                result["tokens"] += 1
                result["text"] += event["choices"][0]["text"]
                if result["tokens"] >= 5:
                    stream_started.set()
        result["outcome"] = "error_event" if result["error"] else (
            "completed" if result["done"] else "closed")
    except Exception as error:
        result["outcome"] = "closed"
        result["why"] = repr(error)
    result["ended"] = time.time()
    stream_started.set()
    results["stream"] = result


plain()  # the reference: the same request, whole, before any fault
reference = results.pop("plain")
if reference.get("status") != 200:
    print(json.dumps({"failed": "the request before the fault failed", "reference": reference}))
    sys.exit(1)
threads = [threading.Thread(target=f, daemon=True) for f in (stream, plain)]
for t in threads:
    t.start()
if not stream_started.wait(30):
    print(json.dumps({"failed": "the stream gave no tokens within 30 s"}))
    sys.exit(1)
in_flight_at_fault = [name for name in ("stream", "plain") if name not in results]
subprocess.run(fault_command, check=True)
fault_at = time.time()
for t in threads:
    t.join(max(0.0, fault_at + wait_seconds - time.time()))
report = {"fault_at": fault_at, "reference": reference["text"], "in_flight_at_fault": in_flight_at_fault,
          "requests": {}}
for name in ("stream", "plain"):
    r = dict(results.get(name, {"outcome": "open"}))
    if "ended" in r:
        r["seconds_after_fault"] = round(r.pop("ended") - fault_at, 3)
    report["requests"][name] = r
print(json.dumps(report))
