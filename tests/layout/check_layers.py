#!/usr/bin/env python3
"""The layering rule, checked: no source file includes one from a higher layer.

Layers, lowest first (docs/design.md, "Layers"). A file may include files of
its own layer or of lower ones. Within coordinator/ the sub-folders are
layers of their own, so that the HTTP server and the cluster wing never meet
except in the composition root (coordinator/deployment/) above both.

Usage: check_layers.py SOURCE_DIR. Prints each violation and exits 1 when
there is one; exits 0 and prints the number of includes checked otherwise.
"""
import re
import sys
from pathlib import Path

from source_tree import source_files

# (folder prefix, layer). The longest matching prefix decides a file's layer.
LAYERS = [
    ("common", 0),
    ("kernels", 1),
    ("transport", 2),
    ("workers", 3),
    ("cluster", 4),
    ("coordinator/config", 5),
    ("coordinator/models", 6),
    ("coordinator/api", 7),
    ("coordinator/chat", 7),
    ("coordinator/http", 8),
    ("coordinator/metrics", 8),
    ("coordinator/engine_loop", 9),
    ("coordinator/server", 10),
    ("coordinator/deployment", 11),
    ("coordinator/cli", 12),
    ("tools", 13),
]
# Pairs that must not include each other in either direction, whatever the
# layers say (the server is not to know the cluster, nor the cluster the server).
APART = [("cluster", "coordinator/server")]

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)


def layer_of(path):
    best = None
    for prefix, layer in LAYERS:
        if path == prefix or path.startswith(prefix + "/"):
            if best is None or len(prefix) > len(best[0]):
                best = (prefix, layer)
    return best


def main():
    root = Path(sys.argv[1])
    files = source_files(root)
    problems, checked = [], 0
    for name in files:
        if name.startswith("tests/"):
            continue
        source = layer_of(name)
        if source is None:
            continue
        for included in INCLUDE.findall((root / name).read_text(encoding="utf-8")):
            target = layer_of(included)
            if target is None:
                continue
            checked += 1
            if target[1] > source[1]:
                problems.append(f"{name} (layer {source[0]}) includes {included} "
                                f"(higher layer {target[0]})")
            for a, b in APART:
                if {source[0], target[0]} == {a, b}:
                    problems.append(f"{name} includes {included}: {a} and {b} must not "
                                    "include each other")
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} include(s) break the layering")
        return 1
    if checked == 0:
        print("no includes found: wrong SOURCE_DIR?")
        return 1
    print(f"layering holds: {checked} includes checked")
    return 0


if __name__ == "__main__":
    sys.exit(main())
