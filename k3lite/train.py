"""Training entry point: `python -m k3lite.train ...`.

Two kinds of run share one command:
  --task {mqar,palindrome,stack} ...   the lab: tiny 2-layer models on recall tasks (k3lite.lab)
  --preset lite --out assets/...       the shipped language-model checkpoint (k3lite.lm_train)
"""
from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if any(a == "--task" or a.startswith("--task=") for a in argv):
        from k3lite.lab import main as lab_main

        return lab_main(argv)
    from k3lite.lm_train import main as lm_main

    return lm_main(argv)


if __name__ == "__main__":
    raise SystemExit(main())
