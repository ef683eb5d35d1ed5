#!/usr/bin/env python3
"""Checks what fault_client.py saw: both requests were in flight when the
fault came, and each ended in one of the allowed ways within the bound.

usage: check_fault_report.py REPORT BOUND_SECONDS NAMED [--may-complete]
- 503: the plain request is answered 503 and the stream (which had begun,
  so its status is 200) ends with one error event of type
  service_unavailable, then [DONE] (docs/serving.md, "Errors"); both
  messages contain NAMED (the lost rank and its host), both within
  BOUND_SECONDS of the fault.
- --may-complete: a request may instead complete, with exactly the text
  the same request gave before the fault (a lossy link that TCP
  survives), within BOUND_SECONDS too.
Prints one line per request; exits 1 on the first that breaks these."""
import json
import sys

report = json.load(open(sys.argv[1]))
bound = float(sys.argv[2])
named = sys.argv[3]
may_complete = "--may-complete" in sys.argv[4:]


def fail(why):
    print("FAIL:", why)
    print(json.dumps(report, indent=1))
    sys.exit(1)


if "failed" in report:
    fail(report["failed"])
if sorted(report["in_flight_at_fault"]) != ["plain", "stream"]:
    fail("not both requests were in flight when the fault came")
outcomes = {}
for name, r in report["requests"].items():
    if r["outcome"] in ("open", "closed"):
        fail(f"{name}: {r['outcome']} (neither answered nor completed)")
    if r["seconds_after_fault"] > bound:
        fail(f"{name}: ended {r['seconds_after_fault']} s after the fault, over {bound} s")
    completed = r.get("status") == 200 and (r["outcome"] == "completed" or name == "plain")
    if completed:
        if not may_complete:
            fail(f"{name}: completed through the fault")
        if r["text"] != report["reference"]:
            fail(f"{name}: completed with a text other than the request's before the fault")
        outcomes[name] = "completed"
    else:
        if name == "plain":
            if r.get("status") != 503:
                fail(f"plain: status {r.get('status')}, expected 503")
            error = json.loads(r["body"])["error"]
        else:
            if not r["done"]:
                fail("stream: no [DONE] after the error event")
            error = r["error"]
        if error["type"] != "service_unavailable":
            fail(f"{name}: error type {error['type']}")
        if named not in error["message"]:
            fail(f"{name}: the error does not name {named!r}: {error['message']}")
        outcomes[name] = "503"
    print(f"{name}: {outcomes[name]} {r['seconds_after_fault']} s after the fault")
print(json.dumps(outcomes))
