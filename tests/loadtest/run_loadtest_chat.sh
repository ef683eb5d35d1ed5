#!/bin/bash
# `tandem-loadtest --endpoint chat` against the real /v1/chat/completions of
# `tandem serve` (embedded default deployment: the tiny pair and its chat
# template). Two short bounded closed-loop runs, each with speculation on and
# off: single-turn chats from synthetic prompts, and the sample conversations
# replayed turn by turn. Every run must finish with zero errors, account for
# every request, report TTFT <= end-to-end latency and count exactly the
# output tokens the server's /metrics says it generated; the per-conversation
# totals must add up to the run's and match the file's turns and max_tokens,
# and (one process) the replayed histories must be partly cached, as the
# responses' usage and the server's prefix cache hits both count.
# With TANDEM_CONFIG and TANDEM_RANKS (start_tandem_server.sh) the server is
# an MPI job, stopped by SIGTERM to its rank 0.
# usage: run_loadtest_chat.sh TANDEM_BINARY SOURCE_DIR WORK_DIR, with
# TANDEM_LOADTEST the tandem-loadtest binary (default: next to TANDEM_BINARY).
set -euo pipefail
tandem=$1 source=$2 work=$3
loadtest=${TANDEM_LOADTEST:-$(dirname "$tandem")/tandem-loadtest}
mkdir -p "$work"
log="$work/server.log"
cd "$source"
source "$source/tests/support/start_tandem_server.sh"
start_tandem_server "$tandem" "$log"

# A fixed gamma, not the server's auto policy: its guard may rightly stop
# drafting for a short run on a loaded machine (it measured plain steps
# faster), and then "spec on" would draft nothing and the check below that
# it drafted would fail for no fault of the chat route.
variants='{"spec on": {"speculation": {"gamma": 4}}, "spec off": {"speculation": false}}'
# ignore_eos: every turn runs to its max_tokens, so token counts are known.
body='{"ignore_eos": true, "temperature": 0.8}'
url="http://127.0.0.1:$port"  # no path: --endpoint chat adds /v1/chat/completions

"$loadtest" --url "$url" --endpoint chat --concurrency 1,3 --requests 6 \
  --input-words 12 --output-tokens 12 --seed 7 --body "$body" --variants "$variants" \
  --json "$work/single_turn.json" --quiet >"$work/single_turn.txt"

# 14 turns = every turn of the file's five conversations: one user replays
# them all; two users may start the sixth (the first again) before the fifth
# ends, so only the totals' consistency is certain there.
conversations=tools/loadtest/sample_conversations.jsonl
"$loadtest" --url "$url" --endpoint chat --conversations "$conversations" \
  --concurrency 1,2 --requests 14 --output-tokens 10 --body "$body" --variants "$variants" \
  --json "$work/multi_turn.json" --quiet >"$work/multi_turn.txt"

/usr/bin/python3 - "$work" "$conversations" "${TANDEM_RANKS:-}" <<'PY'
import json, sys, pathlib
work, conversations = pathlib.Path(sys.argv[1]), sys.argv[2]
single_process = sys.argv[3] == ""

def check_run(run, requests):
    s = run["summary"]
    assert s["requests"] == requests and s["completed"] == requests, s
    assert s["failed"] == 0 and s["errors"] == {}, s
    for stat in ["mean", "median", "p99", "min", "max"]:
        assert 0 < s[stat + "_ttft_ms"] <= s[stat + "_e2el_ms"] + 1e-9, (stat, s)
    spec = run["speculation"]  # tandem serve has /metrics: the scrape must be there
    assert spec["generation_tokens"] == s["total_output_tokens"], (spec, s)
    if run["variant"] == "spec off":
        assert spec["draft_tokens"] == 0, spec
    else:
        assert spec["draft_tokens"] > 0, spec
    return s

single = json.load(open(work / "single_turn.json"))
assert single["config"]["endpoint"] == "chat", single["config"]
assert len(single["runs"]) == 4, len(single["runs"])  # 2 loads x 2 variants
for run in single["runs"]:
    s = check_run(run, 6)
    assert s["total_output_tokens"] == 6 * 12, s
    assert "conversations" not in run, run.keys()

# Each conversation's user turns and max_tokens, from the file itself.
expected = {}
for number, line in enumerate(open(conversations), start=1):
    item = json.loads(line)
    said = [m["role"] for m in item["messages"]] if "messages" in item else \
           [m["from"] for m in item["conversations"]]
    said = ["user" if w == "human" else "assistant" if w == "gpt" else w for w in said]
    # A turn: the first user message, and each user message after a reply.
    turns = 1 + sum(1 for a, b in zip(said, said[1:]) if (a, b) == ("assistant", "user"))
    expected[f"{conversations}:{number}"] = (turns, item.get("max_tokens", 10))
assert sum(t for t, _ in expected.values()) == 14, expected

multi = json.load(open(work / "multi_turn.json"))
assert len(multi["runs"]) == 4, len(multi["runs"])
for run in multi["runs"]:
    s = check_run(run, 14)
    replayed = run["conversations"]
    assert sum(c["turns"] for c in replayed) == 14, replayed
    assert sum(c["completed"] for c in replayed) == s["completed"], (replayed, s)
    assert sum(c["output_tokens"] for c in replayed) == s["total_output_tokens"], (replayed, s)
    assert sum(c["prompt_tokens"] for c in replayed) == s["total_input_tokens"], (replayed, s)
    for c in replayed:
        turns, max_tokens = expected[c["where"]]
        assert c["failed"] == 0 and c["completed"] == c["turns"] <= turns, c
        assert c["finished"] == (c["turns"] == turns), c
        assert c["output_tokens"] == c["turns"] * max_tokens, c
        assert c["prompt_tokens"] > 0 and c["seconds"] > 0, c
    if run["load"] == "concurrency 1":  # one user: the file in order, each to its end
        assert [c["where"] for c in replayed] == list(expected), replayed
        assert all(c["finished"] for c in replayed), replayed
    # Prefix caching (on by default): each turn resends its conversation's
    # history, so some of every run's prompt tokens are cached, and the
    # responses' usage (cached_tokens) counts exactly the target cache's
    # hits on the server's /metrics. Checked in one process only: an MPI
    # job's caches are another matter (tests/cluster/).
    if single_process:
        assert 0 < s["total_cached_tokens"] < s["total_input_tokens"], s
        assert run["prefix_cache"]["target_hits"] == s["total_cached_tokens"], (run["prefix_cache"], s)
print("chat loadtest: all checks passed")
PY

stop_gracefully
wait $pid
trap - EXIT
