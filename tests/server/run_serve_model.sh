#!/bin/bash
# `tandem serve --model DIR [--draft DIR]`: a checkpoint served without a
# deployment file.
# - With the tiny pair it serves (a completion, drafted by the draft model)
#   and prints its deployment as YAML; that YAML, saved and checked with
#   `--check-config`, is the same deployment (its summary equals the one
#   printed), and SIGTERM stops the server with exit 0.
# - Without --draft the n-gram drafter drafts (the YAML says so, and so do
#   the completion's "speculation" and the ready line).
# - Errors name the flag or the file: a directory that is not there, one
#   without config.json, a truncated model.safetensors, a bad --gamma;
#   --model with --config, --draft or --gamma without --model.
# - Weights holding a NaN are refused at load by `serve` and `generate`
#   (exit 1), naming the file, the tensor, the element and the value.
# usage: run_serve_model.sh TANDEM_BINARY SOURCE_DIR WORK_DIR
set -euo pipefail
tandem=$1 source=$2 work=$3
mkdir -p "$work"
cd "$source"
source "$source/tests/support/poke_weight.sh"

# expect STATUS PATTERN COMMAND...: COMMAND exits STATUS and prints PATTERN
# (a grep -E pattern) on stdout or stderr.
expect() {
  local want=$1 pattern=$2
  shift 2
  local status=0 output
  output=$(timeout 120 "$@" 2>&1) || status=$?
  [ "$status" -eq "$want" ] || { echo "$*: expected exit $want, got $status: $output"; exit 1; }
  grep -qE -- "$pattern" <<< "$output" || { echo "$*: expected /$pattern/ in: $output"; exit 1; }
}

pid=""
stop_server() { [ -z "$pid" ] || kill -9 "$pid" 2>/dev/null || true; }
trap stop_server EXIT

# serve_model NAME FLAGS...: starts `tandem serve FLAGS --port 0` (stdout to
# NAME.yaml, stderr to NAME.log) and waits until it is ready; sets $pid, $port.
serve_model() {
  local name=$1
  shift
  : >"$work/$name.log"
  "$tandem" serve "$@" --port 0 >"$work/$name.yaml" 2>"$work/$name.log" &
  pid=$!
  port=""
  for _ in $(seq 1 1200); do
    port=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\).*|\1|p' "$work/$name.log" | head -n 1)
    if [ -n "$port" ] && grep -q "tandem: ready" "$work/$name.log"; then return 0; fi
    kill -0 $pid 2>/dev/null || { cat "$work/$name.log"; exit 1; }
    sleep 0.1
  done
  echo "$name: the server did not become ready"
  cat "$work/$name.log"
  exit 1
}

# stop_gracefully NAME: SIGTERM, and the server must exit 0.
stop_gracefully() {
  kill -TERM $pid
  local status=0
  wait $pid || status=$?
  pid=""
  [ $status -eq 0 ] || { cat "$work/$1.log"; echo "$1: exit $status after SIGTERM"; exit 1; }
}

# complete: a short greedy completion; prints the response body.
complete() {
  curl -sS --max-time 60 -H 'Content-Type: application/json' \
    -d '{"prompt": "The history of the city", "max_tokens": 12, "temperature": 0}' \
    "http://127.0.0.1:$port/v1/completions"
}

# The pair.
serve_model pair --model models/tiny/target --draft models/tiny/draft
reply=$(complete)
grep -q '"text":"' <<< "$reply" || { echo "no completion: $reply"; exit 1; }
grep -q '"drafter":"model"' <<< "$reply" || { echo "not drafted by the model: $reply"; exit 1; }
stop_gracefully pair
yaml="$work/pair.yaml"
grep -qx "    path: models/tiny/target" "$yaml" || { cat "$yaml"; echo "no target path"; exit 1; }
grep -qx "    path: models/tiny/draft" "$yaml" || { cat "$yaml"; echo "no draft path"; exit 1; }
grep -qx "  drafter: model" "$yaml" || { cat "$yaml"; echo "no drafter"; exit 1; }
# The summary printed as comments is what --check-config finds in the YAML.
sed -n 's/^#   //p' "$yaml" >"$work/pair.summary"
[ -s "$work/pair.summary" ] || { cat "$yaml"; echo "no summary in the YAML"; exit 1; }
"$tandem" serve --check-config "$yaml" | tail -n +2 >"$work/pair.checked"
diff "$work/pair.summary" "$work/pair.checked" || { echo "the printed YAML is another deployment"; exit 1; }

# Without --draft: the n-gram drafter.
serve_model alone --model models/tiny/target --gamma 3
reply=$(complete)
grep -q '"drafter":"ngram"' <<< "$reply" || { echo "not the n-gram drafter: $reply"; exit 1; }
grep -q '"gamma_policy":"3"' <<< "$reply" || { echo "not gamma 3: $reply"; exit 1; }
grep -q "drafter ngram" "$work/alone.log" || { cat "$work/alone.log"; exit 1; }
stop_gracefully alone
grep -qx "  drafter: ngram" "$work/alone.yaml" || { cat "$work/alone.yaml"; exit 1; }
grep -qx "  gamma: 3" "$work/alone.yaml" || { cat "$work/alone.yaml"; exit 1; }
if grep -q "^  draft:" "$work/alone.yaml"; then echo "a draft section without --draft"; exit 1; fi

# A directory that is not a checkpoint.
expect 2 "^tandem serve: error: --model: models/no-such-model is not a directory" \
  "$tandem" serve --model models/no-such-model
expect 2 "^tandem serve: error: --model: models/tiny holds no config.json" \
  "$tandem" serve --model models/tiny
expect 2 "^tandem serve: error: --draft: models/no-such-draft is not a directory" \
  "$tandem" serve --model models/tiny/target --draft models/no-such-draft
truncated="$work/truncated"
rm -rf "$truncated" && mkdir -p "$truncated"
cp models/tiny/target/*.json "$truncated/"
head -c 1000 models/tiny/target/model.safetensors >"$truncated/model.safetensors"
expect 1 "error: $truncated/model.safetensors: .*truncated or corrupt" \
  "$tandem" serve --model "$truncated" --port 0
rm "$truncated/model.safetensors"
expect 1 "error: $truncated: neither model.safetensors nor model.safetensors.index.json exists" \
  "$tandem" serve --model "$truncated" --port 0

# A NaN in the LM head (BF16, (4096, 256)) at row 2, column 210: element 722.
nan_model="$work/nan-weights"
rm -rf "$nan_model" && mkdir -p "$nan_model"
cp models/tiny/target/*.json models/tiny/target/model.safetensors "$nan_model/"
weights="$nan_model/model.safetensors"
poke_bf16 "$weights" lm_head.weight 722 7fc0
refused="error: $weights: tensor 'lm_head.weight' holds a non-finite value \(nan\) at element 722 \(row 2, column 210\); the checkpoint is corrupt"
expect 1 "^tandem serve: $refused" "$tandem" serve --model "$nan_model" --port 0
expect 1 "^tandem generate: $refused" \
  "$tandem" generate --model "$nan_model" --prompt "The history of the city" --max-tokens 4

# Flags that do not go together.
expect 2 "(--model excludes --config|--config excludes --model)" "$tandem" serve --model models/tiny/target --config configs/local.yaml
expect 2 "(--model excludes --check-config|--check-config excludes --model)" \
  "$tandem" serve --model models/tiny/target --check-config configs/local.yaml
expect 2 "^tandem serve: error: --draft needs --model" "$tandem" serve --draft models/tiny/draft
expect 2 "^tandem serve: error: --gamma needs --model" "$tandem" serve --gamma 4
expect 2 "^tandem serve: error: --gamma: expected \"auto\" or an integer in \[0, 64\], got \"65\"" \
  "$tandem" serve --model models/tiny/target --gamma 65
expect 2 "^tandem serve: error: --gamma: expected \"auto\" or an integer in \[0, 64\], got \"-1\"" \
  "$tandem" serve --model models/tiny/target --gamma=-1
expect 2 "^tandem serve: error: --port: must be in \[0, 65535\]" \
  "$tandem" serve --model models/tiny/target --port 70000
expect 0 "--model DIR" "$tandem" serve --help
echo "serve --model: OK"
