"""The C++/CUDA sources of a tree, for the layout checks beside this file."""
import subprocess
from pathlib import Path

SUFFIXES = (".h", ".cpp", ".cu", ".cuh")


def source_files(root: Path):
    """The tracked sources of a checkout, as paths relative to root; every
    source under root otherwise (a fixture, or a tree copied without .git)."""
    if (root / ".git").exists():
        listed = subprocess.run(["git", "ls-files", *("*" + s for s in SUFFIXES)], cwd=root,
                                capture_output=True, text=True)
        if listed.returncode == 0:
            return listed.stdout.split()
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.suffix in SUFFIXES)
